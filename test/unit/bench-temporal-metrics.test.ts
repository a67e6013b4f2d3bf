import { delta, parseCounters } from '../../bench/temporal-metrics';

// The bench's per-run request counts read the Temporal server's Prometheus text: the series kept,
// summed over the labels the bench does not key on, and the difference of two readings.
const exposition = `# HELP service_requests service_requests counter
# TYPE service_requests counter
service_requests{namespace="default",operation="RequestCancelWorkflowExecution",service_name="frontend"} 3
service_requests{namespace="other",operation="RequestCancelWorkflowExecution",service_name="frontend"} 2
service_requests{namespace="default",operation="RequestCancelWorkflowExecution",service_name="history"} 5
persistence_requests{operation="UpdateWorkflowExecution",service_name="history"} 7.5
task_requests{operation="TransferActiveTaskCloseExecution",service_name="history",task_type="x"} 1
service_latency_bucket{operation="RequestCancelWorkflowExecution",le="0.1"} 9
`;

describe('bench: Temporal server counters', () => {
  it('keeps the counted series by service and operation, summed over the other labels', () => {
    expect(Object.fromEntries(parseCounters(exposition))).toEqual({
      'service_requests{frontend RequestCancelWorkflowExecution}': 5,
      'service_requests{history RequestCancelWorkflowExecution}': 5,
      'persistence_requests{history UpdateWorkflowExecution}': 7.5,
      'task_requests{history TransferActiveTaskCloseExecution}': 1,
    });
  });

  it('a delta keeps the series that changed, new ones counted from zero', () => {
    const before = parseCounters(exposition);
    const after = parseCounters(
      `${exposition.replace('service_name="history"} 5', 'service_name="history"} 8')}service_requests{operation="PollWorkflowExecutionHistory",service_name="frontend"} 4\n`,
    );
    expect(Object.fromEntries(delta(before, after))).toEqual({
      'service_requests{history RequestCancelWorkflowExecution}': 3,
      'service_requests{frontend PollWorkflowExecutionHistory}': 4,
    });
  });
});
