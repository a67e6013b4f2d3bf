/**
 * OpenTelemetry's SDK for this process, started by src/main.ts only when tracing is on (an OTLP
 * endpoint set, `OTEL_SDK_DISABLED` not `true`: `config.tracing.enabled`); while it is off this
 * module is never loaded. Configuration is OpenTelemetry's own: the exporter reads
 * `OTEL_EXPORTER_OTLP_(TRACES_)ENDPOINT` and its headers itself, `OTEL_EXPORTER_OTLP_PROTOCOL`
 * chooses it (`http/protobuf` default, `grpc`, `http/json`), the provider reads
 * `OTEL_TRACES_SAMPLER` / `_ARG`, the resource `OTEL_SERVICE_NAME` (default `automation-governance`)
 * and `OTEL_RESOURCE_ATTRIBUTES`. Every span leaves through `AllowlistExporter`
 * (src/tracing/allowlist.ts), the workflow sandbox's spans too (src/temporal/tracing.ts hands them
 * the same exporter).
 */
import type { ExportResult } from '@opentelemetry/core';
import type * as OtlpGrpc from '@opentelemetry/exporter-trace-otlp-grpc';
import type * as OtlpHttp from '@opentelemetry/exporter-trace-otlp-http';
import type * as OtlpProto from '@opentelemetry/exporter-trace-otlp-proto';
import { Resource, envDetectorSync, type IResource } from '@opentelemetry/resources';
import {
  BatchSpanProcessor,
  type ReadableSpan,
  type SpanExporter,
  type SpanProcessor,
} from '@opentelemetry/sdk-trace-base';
import { NodeTracerProvider } from '@opentelemetry/sdk-trace-node';
import { allowedSpan, type SpanLike } from './allowlist';
import { setTracingOn } from './spans';

export const DEFAULT_SERVICE_NAME = 'automation-governance';

/** Passes every span through the allowlist on its way to `inner`. */
export class AllowlistExporter implements SpanExporter {
  constructor(private readonly inner: SpanExporter) {}

  export(spans: ReadableSpan[], resultCallback: (result: ExportResult) => void): void {
    this.inner.export(
      spans.map((span) => allowedSpan(span as unknown as SpanLike) as unknown as ReadableSpan),
      resultCallback,
    );
  }

  shutdown(): Promise<void> {
    return this.inner.shutdown();
  }

  forceFlush(): Promise<void> {
    return this.inner.forceFlush?.() ?? Promise.resolve();
  }
}

/** The OTLP exporter OTEL_EXPORTER_OTLP_(TRACES_)PROTOCOL names; it reads its endpoint itself. */
export function otlpExporter(env: NodeJS.ProcessEnv): SpanExporter {
  const protocol = (
    env.OTEL_EXPORTER_OTLP_TRACES_PROTOCOL ??
    env.OTEL_EXPORTER_OTLP_PROTOCOL ??
    'http/protobuf'
  ).trim();
  /* eslint-disable @typescript-eslint/no-require-imports -- only the chosen exporter is loaded */
  if (protocol === 'grpc') {
    const { OTLPTraceExporter } = require('@opentelemetry/exporter-trace-otlp-grpc') as typeof OtlpGrpc;
    return new OTLPTraceExporter();
  }
  if (protocol === 'http/json') {
    const { OTLPTraceExporter } = require('@opentelemetry/exporter-trace-otlp-http') as typeof OtlpHttp;
    return new OTLPTraceExporter();
  }
  const { OTLPTraceExporter } = require('@opentelemetry/exporter-trace-otlp-proto') as typeof OtlpProto;
  /* eslint-enable @typescript-eslint/no-require-imports */
  return new OTLPTraceExporter();
}

/** The process's resource: `service.name` (OTEL_SERVICE_NAME or the default) and OTEL_RESOURCE_ATTRIBUTES. */
export function tracingResource(env: NodeJS.ProcessEnv): IResource {
  const name = env.OTEL_SERVICE_NAME?.trim() || DEFAULT_SERVICE_NAME;
  return Resource.default()
    .merge(envDetectorSync.detect())
    .merge(new Resource({ 'service.name': name }));
}

export interface Tracing {
  /** The allowlisted exporter. */
  exporter: SpanExporter;
  /** The batching processor over it: the worker hands it the workflow sandbox's spans too. */
  processor: SpanProcessor;
  resource: IResource;
  /** Flushes what is buffered and stops exporting. */
  shutdown(): Promise<void>;
  forceFlush(): Promise<void>;
}

/**
 * Registers the global tracer provider, the W3C propagator and the async context manager, and
 * exports through `exporter` (default: the OTLP exporter of the environment), allowlisted.
 */
export function startTracing(env: NodeJS.ProcessEnv, exporter: SpanExporter = otlpExporter(env)): Tracing {
  const allowlisted = new AllowlistExporter(exporter);
  const resource = tracingResource(env);
  const processor = new BatchSpanProcessor(allowlisted, { scheduledDelayMillis: 500 });
  const provider = new NodeTracerProvider({ resource, spanProcessors: [processor] });
  provider.register();
  setTracingOn(true);
  return {
    exporter: allowlisted,
    processor,
    resource,
    forceFlush: () => provider.forceFlush(),
    async shutdown() {
      setTracingOn(false);
      await provider.shutdown();
    },
  };
}
