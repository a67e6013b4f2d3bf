/**
 * The steps of an automation as JSON, in CodeMirror 6 (loaded with the automation page only).
 * Parse errors are shown under it; the API's own validation errors are shown by the page.
 */
import { defaultKeymap, history, historyKeymap, indentWithTab } from '@codemirror/commands';
import { json } from '@codemirror/lang-json';
import { bracketMatching, indentOnInput, syntaxHighlighting, defaultHighlightStyle } from '@codemirror/language';
import { EditorState } from '@codemirror/state';
import { EditorView, highlightActiveLine, keymap, lineNumbers } from '@codemirror/view';
import { useEffect, useRef } from 'react';

export default function StepsEditor({
  value,
  onChange,
  labelledBy,
  describedBy,
  invalid,
}: {
  value: string;
  onChange: (value: string) => void;
  labelledBy: string;
  describedBy?: string;
  invalid?: boolean;
}) {
  const host = useRef<HTMLDivElement>(null);
  const view = useRef<EditorView | null>(null);
  const latest = useRef(onChange);
  latest.current = onChange;

  useEffect(() => {
    if (!host.current) return;
    const attributes: Record<string, string> = { 'aria-labelledby': labelledBy, 'aria-multiline': 'true' };
    if (describedBy) attributes['aria-describedby'] = describedBy;
    const editor = new EditorView({
      parent: host.current,
      state: EditorState.create({
        doc: value,
        extensions: [
          lineNumbers(),
          history(),
          indentOnInput(),
          bracketMatching(),
          highlightActiveLine(),
          syntaxHighlighting(defaultHighlightStyle),
          json(),
          // Long lines wrap: on a phone the editor never scrolls sideways (nor the page).
          EditorView.lineWrapping,
          // Tab indents; Escape then Tab leaves the editor (CodeMirror's documented escape hatch).
          keymap.of([...defaultKeymap, ...historyKeymap, indentWithTab]),
          EditorView.contentAttributes.of(attributes),
          EditorView.updateListener.of((update) => {
            if (update.docChanged) latest.current(update.state.doc.toString());
          }),
        ],
      }),
    });
    view.current = editor;
    return () => editor.destroy();
    // The editor is made once; later value changes from outside are applied below.
  }, []);

  useEffect(() => {
    const editor = view.current;
    if (editor && editor.state.doc.toString() !== value) {
      editor.dispatch({ changes: { from: 0, to: editor.state.doc.length, insert: value } });
    }
  }, [value]);

  return <div className={`editor${invalid ? ' invalid' : ''}`} ref={host} />;
}
