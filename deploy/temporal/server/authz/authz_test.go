package authz

import (
	"context"
	"crypto/x509/pkix"
	"os"
	"testing"

	"go.temporal.io/server/common/api"
	"go.temporal.io/server/common/authorization"
)

func policy(t *testing.T) *Policy {
	t.Helper()
	raw, err := os.ReadFile("../../authorization.yaml")
	if err != nil {
		t.Fatal(err)
	}
	p, err := Parse(raw, nil)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func decide(t *testing.T, p *Policy, subject *pkix.Name, fullMethod string) authorization.Decision {
	t.Helper()
	claims, err := p.GetClaims(&authorization.AuthInfo{TLSSubject: subject})
	if err != nil {
		t.Fatal(err)
	}
	result, err := p.Authorize(context.Background(), claims, &authorization.CallTarget{APIName: fullMethod, Namespace: "default"})
	if err != nil {
		t.Fatal(err)
	}
	return result.Decision
}

func TestRolesOfTheShippedFile(t *testing.T) {
	p := policy(t)
	wf := func(m string) string { return api.WorkflowServicePrefix + m }
	op := func(m string) string { return api.OperatorServicePrefix + m }
	admin := "/temporal.server.api.adminservice.v1.AdminService/DescribeCluster"
	allow, deny := authorization.DecisionAllow, authorization.DecisionDeny
	cases := []struct {
		cn     string
		method string
		want   authorization.Decision
	}{
		{"temporal-client-ui", wf("DescribeWorkflowExecution"), allow},
		{"temporal-client-ui", wf("ListWorkflowExecutions"), allow},
		{"temporal-client-ui", wf("TerminateWorkflowExecution"), deny},
		{"temporal-client-ui", wf("SignalWorkflowExecution"), deny},
		{"temporal-client-ui", wf("StartWorkflowExecution"), deny},
		{"temporal-client-ui", wf("RequestCancelWorkflowExecution"), deny},
		{"temporal-client-ui", op("AddSearchAttributes"), deny},
		{"temporal-client-ui", admin, deny},
		{"temporal-client-worker", wf("PollWorkflowTaskQueue"), allow},
		{"temporal-client-worker", wf("RespondActivityTaskCompleted"), allow},
		{"temporal-client-worker", wf("TerminateWorkflowExecution"), allow},
		{"temporal-client-api", wf("StartWorkflowExecution"), allow},
		{"temporal-client-api", wf("UpdateWorkflowExecution"), allow},
		{"temporal-client-api", wf("RequestCancelWorkflowExecution"), allow},
		{"temporal-client-api", wf("RegisterNamespace"), allow},
		{"temporal-client-api", wf("UpdateNamespace"), allow},
		{"temporal-client-api", op("AddSearchAttributes"), allow},
		{"temporal-client-api", op("RemoveSearchAttributes"), deny},
		{"temporal-client-api", op("DeleteNamespace"), deny},
		{"temporal-client-api", wf("DeleteWorkflowExecution"), deny},
		{"temporal-client-api", wf("StartBatchOperation"), deny},
		{"temporal-client-api", admin, deny},
		{"temporal-system-worker", admin, allow},
		{"temporal-system-worker", op("DeleteNamespace"), allow},
		{"someone-else", wf("DescribeNamespace"), deny},
		{"someone-else", wf("GetSystemInfo"), allow}, // a health check
	}
	for _, c := range cases {
		if got := decide(t, p, &pkix.Name{CommonName: c.cn}, c.method); got != c.want {
			t.Errorf("%s %s: decision %d, want %d", c.cn, c.method, got, c.want)
		}
	}
	if got := decide(t, p, nil, wf("DescribeNamespace")); got != deny {
		t.Errorf("no certificate: decision %d, want deny", got)
	}
}

func TestParseRefusesWhatItDoesNotKnow(t *testing.T) {
	for name, raw := range map[string]string{
		"unknown access":       "roles: {a: {access: writ}}\nsubjects: {x: a}\n",
		"unknown API":          "roles: {a: {access: write, allow: [Nope]}}\nsubjects: {x: a}\n",
		"unknown role":         "roles: {a: {access: write}}\nsubjects: {x: b}\n",
		"unknown field":        "roles: {a: {access: write, alow: [StartWorkflowExecution]}}\nsubjects: {x: a}\n",
		"no subjects":          "roles: {a: {access: write}}\n",
		"allowed and denied":   "roles: {a: {access: none, allow: [StartWorkflowExecution], deny: [StartWorkflowExecution]}}\nsubjects: {x: a}\n",
		"missing access level": "roles: {a: {allow: [StartWorkflowExecution]}}\nsubjects: {x: a}\n",
	} {
		if _, err := Parse([]byte(raw), nil); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}
