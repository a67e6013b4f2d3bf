// Package authz authorizes calls at the Temporal frontend by the subject of the caller's client
// certificate: a configuration file maps each certificate's common name to a role, and each role
// to the APIs it may call. A subject the file does not name may call nothing but the health checks.
package authz

import (
	"context"
	"fmt"
	"os"
	"sort"
	"strings"

	"go.temporal.io/server/common/api"
	"go.temporal.io/server/common/authorization"
	"go.temporal.io/server/common/log"
	"go.temporal.io/server/common/log/tag"
	"gopkg.in/yaml.v3"
)

// Access is a role's base grant, by the access level Temporal gives each API.
type Access string

const (
	// AccessNone grants no API: only the role's allow list.
	AccessNone Access = "none"
	// AccessRead grants the read-only APIs of every namespace and of the cluster.
	AccessRead Access = "read"
	// AccessWrite grants the read-only and the write APIs (start, signal, update, terminate, poll…), not the admin ones.
	AccessWrite Access = "write"
	// AccessAdmin grants every API, the operator and admin services included.
	AccessAdmin Access = "admin"
)

// RoleConfig is one role of the file.
type RoleConfig struct {
	Access Access   `yaml:"access"`
	Allow  []string `yaml:"allow"`
	Deny   []string `yaml:"deny"`
}

// Config is the file: roles by name, and the role of each certificate subject common name.
type Config struct {
	Roles    map[string]RoleConfig `yaml:"roles"`
	Subjects map[string]string     `yaml:"subjects"`
}

// Role is a validated role: its base grant and its exceptions, by method name.
type Role struct {
	Name  string
	base  authorization.Role
	allow map[string]bool
	deny  map[string]bool
}

// Policy is the validated configuration, both the claim mapper and the authorizer of the frontend.
type Policy struct {
	roles    map[string]*Role
	subjects map[string]*Role
	logger   log.Logger
}

var (
	_ authorization.ClaimMapper = (*Policy)(nil)
	_ authorization.Authorizer  = (*Policy)(nil)
)

// Load reads and validates the file at path.
func Load(path string, logger log.Logger) (*Policy, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("authorization file: %w", err)
	}
	return Parse(raw, logger)
}

// Parse validates a configuration: every access level known, every API name one the frontend
// serves, every subject's role defined, at least one subject.
func Parse(raw []byte, logger log.Logger) (*Policy, error) {
	var cfg Config
	decoder := yaml.NewDecoder(strings.NewReader(string(raw)))
	decoder.KnownFields(true)
	if err := decoder.Decode(&cfg); err != nil {
		return nil, fmt.Errorf("authorization file: %w", err)
	}
	if len(cfg.Subjects) == 0 {
		return nil, fmt.Errorf("authorization file: no subjects")
	}
	p := &Policy{roles: map[string]*Role{}, subjects: map[string]*Role{}, logger: logger}
	for name, rc := range cfg.Roles {
		role := &Role{Name: name, allow: map[string]bool{}, deny: map[string]bool{}}
		switch rc.Access {
		case AccessNone:
			role.base = authorization.RoleUndefined
		case AccessRead:
			role.base = authorization.RoleReader
		case AccessWrite:
			role.base = authorization.RoleWriter
		case AccessAdmin:
			role.base = authorization.RoleAdmin
		default:
			return nil, fmt.Errorf("authorization file: role %q: access must be none, read, write or admin, not %q", name, rc.Access)
		}
		for _, list := range []struct {
			names []string
			into  map[string]bool
			what  string
		}{{rc.Allow, role.allow, "allow"}, {rc.Deny, role.deny, "deny"}} {
			for _, method := range list.names {
				if !knownMethod(method) {
					return nil, fmt.Errorf("authorization file: role %q: %s: %q is not an API of the workflow or operator service", name, list.what, method)
				}
				list.into[method] = true
			}
		}
		for method := range role.allow {
			if role.deny[method] {
				return nil, fmt.Errorf("authorization file: role %q: %q is both allowed and denied", name, method)
			}
		}
		p.roles[name] = role
	}
	for subject, roleName := range cfg.Subjects {
		role, ok := p.roles[roleName]
		if !ok {
			return nil, fmt.Errorf("authorization file: subject %q: no role %q", subject, roleName)
		}
		if subject == "" {
			return nil, fmt.Errorf("authorization file: an empty subject")
		}
		p.subjects[subject] = role
	}
	return p, nil
}

// knownMethod says whether name is a method of the workflow or the operator service.
func knownMethod(name string) bool {
	for _, prefix := range []string{api.WorkflowServicePrefix, api.OperatorServicePrefix} {
		if api.GetMethodMetadata(prefix+name).Scope != api.ScopeUnknown {
			return true
		}
	}
	return false
}

// Subjects lists the configured subjects and their roles, for the start-up log.
func (p *Policy) Subjects() []string {
	out := make([]string, 0, len(p.subjects))
	for subject, role := range p.subjects {
		out = append(out, subject+"="+role.Name)
	}
	sort.Strings(out)
	return out
}

// GetClaims maps a verified client certificate to its role by the subject's common name. A call
// without a certificate, or from a subject the file does not name, gets claims with no role.
func (p *Policy) GetClaims(info *authorization.AuthInfo) (*authorization.Claims, error) {
	if info == nil || info.TLSSubject == nil {
		return &authorization.Claims{}, nil
	}
	cn := info.TLSSubject.CommonName
	role, ok := p.subjects[cn]
	if !ok {
		return &authorization.Claims{Subject: cn}, nil
	}
	return &authorization.Claims{Subject: cn, System: role.base, Extensions: role}, nil
}

// AuthInfoRequired: the mapper also runs for a call with no certificate (it then grants nothing).
func (p *Policy) AuthInfoRequired() bool { return false }

var defaultAuthorizer = authorization.NewDefaultAuthorizer()

// Authorize allows the health checks to everyone; otherwise a call from a subject with a role,
// to an API the role's deny list does not name, which its allow list names or its access level covers.
func (p *Policy) Authorize(ctx context.Context, claims *authorization.Claims, target *authorization.CallTarget) (authorization.Result, error) {
	if authorization.IsHealthCheckAPI(target.APIName) {
		return authorization.Result{Decision: authorization.DecisionAllow}, nil
	}
	var role *Role
	subject := ""
	if claims != nil {
		subject = claims.Subject
		role, _ = claims.Extensions.(*Role)
	}
	method := api.MethodName(target.APIName)
	if role == nil {
		return p.deny(subject, "", target, "the certificate's subject has no role")
	}
	public := strings.HasPrefix(target.APIName, api.WorkflowServicePrefix) || strings.HasPrefix(target.APIName, api.OperatorServicePrefix)
	if public && role.deny[method] {
		return p.deny(subject, role.Name, target, fmt.Sprintf("role %s may not call %s", role.Name, method))
	}
	if public && role.allow[method] {
		return authorization.Result{Decision: authorization.DecisionAllow}, nil
	}
	result, err := defaultAuthorizer.Authorize(ctx, claims, target)
	if err != nil || result.Decision == authorization.DecisionAllow {
		return result, err
	}
	return p.deny(subject, role.Name, target, fmt.Sprintf("role %s may not call %s", role.Name, method))
}

func (p *Policy) deny(subject, role string, target *authorization.CallTarget, reason string) (authorization.Result, error) {
	if p.logger != nil {
		p.logger.Warn("Call refused by the authorizer.",
			tag.NewStringTag("subject", subject), tag.NewStringTag("role", role),
			tag.NewStringTag("api", target.APIName), tag.WorkflowNamespace(target.Namespace))
	}
	return authorization.Result{Decision: authorization.DecisionDeny, Reason: reason}, nil
}
