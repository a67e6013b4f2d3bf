/**
 * The first screen of `npm start`: once start-up is done, one block with the URLs and, on a new
 * store, the one-time super_admin secret. Written to stdout directly, never to the log stream.
 * Each line starts with its label (`API:`, `client_secret:`), so scripts can read it too.
 */
export interface BootstrapSecret {
  clientId: string;
  clientSecret: string;
  tokenUrl: string;
}

export class StartBanner {
  private readonly urls: Array<[string, string]> = [];
  private bootstrap: BootstrapSecret | undefined;

  addUrl(label: string, url: string): void {
    this.urls.push([label, url]);
  }

  setBootstrap(secret: BootstrapSecret): void {
    this.bootstrap = secret;
  }

  render(colors: boolean): string {
    const paint = (code: string, text: string): string => (colors ? `\u001b[${code}m${text}\u001b[0m` : text);
    const width = Math.max(...this.urls.map(([label]) => label.length + 1), 17);
    const lines = ['', paint('1;32', '━━ Ready ' + '━'.repeat(62))];
    for (const [label, url] of this.urls) lines.push(`${`${label}:`.padEnd(width + 1)}${paint('1', url)}`);
    if (this.bootstrap) {
      const { clientId, clientSecret, tokenUrl } = this.bootstrap;
      lines.push(
        '',
        paint('1;33', 'A super_admin API client was created. Its secret is shown only now:'),
        `  client_id:     ${paint('1', clientId)}`,
        `  client_secret: ${paint('1;33', clientSecret)}`,
        `  token:         curl -s -d grant_type=client_credentials -d client_id=${clientId} -d client_secret=... ${tokenUrl}`,
      );
    }
    lines.push(paint('1;32', '━'.repeat(71)), '');
    return lines.join('\n');
  }
}
