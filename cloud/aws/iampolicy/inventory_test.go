package iampolicy

import (
	"reflect"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/arczonalshift"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/aws-sdk-go-v2/service/eks"
	"github.com/aws/aws-sdk-go-v2/service/eventbridge"
	"github.com/aws/aws-sdk-go-v2/service/iam"
	"github.com/aws/aws-sdk-go-v2/service/pricing"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/ssm"

	"github.com/stevedore-autoscaler/stevedore/cloud/aws/sdk"
)

// services pairs each interface of package sdk with the real client that
// implements it.
var services = []struct {
	name   string
	iface  reflect.Type
	client reflect.Type
}{
	{"EC2", reflect.TypeFor[sdk.EC2](), reflect.TypeFor[*ec2.Client]()},
	{"SSM", reflect.TypeFor[sdk.SSM](), reflect.TypeFor[*ssm.Client]()},
	{"SQS", reflect.TypeFor[sdk.SQS](), reflect.TypeFor[*sqs.Client]()},
	{"IAM", reflect.TypeFor[sdk.IAM](), reflect.TypeFor[*iam.Client]()},
	{"EKS", reflect.TypeFor[sdk.EKS](), reflect.TypeFor[*eks.Client]()},
	{"Pricing", reflect.TypeFor[sdk.Pricing](), reflect.TypeFor[*pricing.Client]()},
	{"EventBridge", reflect.TypeFor[sdk.EventBridge](), reflect.TypeFor[*eventbridge.Client]()},
	{"ARCZonalShift", reflect.TypeFor[sdk.ARCZonalShift](), reflect.TypeFor[*arczonalshift.Client]()},
}

// TestEveryClientIsListed guards the services table itself: every field of
// sdk.Clients is one of its interfaces.
func TestEveryClientIsListed(t *testing.T) {
	ct := reflect.TypeFor[sdk.Clients]()
	for i := range ct.NumField() {
		f := ct.Field(i)
		found := false
		for _, s := range services {
			if s.iface == f.Type {
				found = true
			}
		}
		if !found {
			t.Errorf("sdk.Clients.%s (%s) is not in this test's services table; add it, and its calls to Inventory", f.Name, f.Type)
		}
	}
}

// TestEveryCallIsInTheInventory fails when an operation is added to one of
// package sdk's interfaces without an Inventory entry saying which IAM
// actions it needs.
func TestEveryCallIsInTheInventory(t *testing.T) {
	for _, s := range services {
		for i := range s.iface.NumMethod() {
			op := s.iface.Method(i).Name
			c, ok := Lookup(s.name, op)
			if !ok {
				t.Errorf("sdk.%s.%s has no entry in iampolicy.Inventory: add one with the IAM actions it needs (and the statement that grants them), or CallerDiagnose/CallerInjection with the reason the controller does not need it", s.name, op)
				continue
			}
			if c.Caller == CallerController && len(c.Grants) == 0 {
				t.Errorf("Inventory entry %s.%s is called by the controller but grants no action", s.name, op)
			}
		}
	}
}

// TestInventoryNamesRealOperations: every entry is an operation of the
// real SDK client (entries may run ahead of the interfaces, not of AWS),
// appears once, and names actions of its own service's prefix or one of the
// cross-service actions a launch needs.
func TestInventoryNamesRealOperations(t *testing.T) {
	seen := map[string]bool{}
	for _, c := range Inventory {
		key := c.Service + "." + c.Operation
		if seen[key] {
			t.Errorf("%s is listed twice", key)
		}
		seen[key] = true
		var client reflect.Type
		for _, s := range services {
			if s.name == c.Service {
				client = s.client
			}
		}
		if client == nil {
			t.Errorf("%s: unknown service %q", key, c.Service)
			continue
		}
		if _, ok := client.MethodByName(c.Operation); !ok {
			t.Errorf("%s: %s has no method %s", key, client, c.Operation)
		}
		if c.Caller != CallerController && len(c.Grants) > 0 {
			t.Errorf("%s: only controller calls grant actions", key)
		}
		if c.Scope == "" {
			t.Errorf("%s: say what the grants are scoped to (or why the controller does not call it)", key)
		}
		for _, g := range c.Grants {
			if !strings.Contains(g.Action, ":") {
				t.Errorf("%s: action %q is not service:Action", key, g.Action)
			}
		}
	}
	for _, want := range []string{"EC2.DescribeCapacityReservations", "EC2.DescribePlacementGroups"} {
		if !seen[want] {
			t.Errorf("%s is missing from the inventory", want)
		}
	}
}

// TestEveryStatementIsUsed: every statement scope is named by some grant,
// and every grant names a defined statement.
func TestEveryStatementIsUsed(t *testing.T) {
	defined := map[string]bool{}
	for _, s := range scopes(DefaultParams) {
		defined[s.sid] = true
	}
	used := map[string]bool{}
	for _, c := range Inventory {
		for _, g := range c.Grants {
			used[g.Statement] = true
			if !defined[g.Statement] {
				t.Errorf("%s.%s grants %s in statement %q, which is not defined", c.Service, c.Operation, g.Action, g.Statement)
			}
		}
	}
	for sid := range defined {
		if !used[sid] {
			t.Errorf("statement %s grants nothing; remove it or name it from the inventory", sid)
		}
	}
}

// TestNoUnconditionedCreatedResources: the resources a launch creates
// (instances, volumes, fleets, network interfaces, spot requests, launch
// templates) appear only in statements with a tag condition.
func TestNoUnconditionedCreatedResources(t *testing.T) {
	pol := ControllerPolicy(Params{})
	for _, s := range pol.Statement {
		for _, r := range s.Resource {
			for _, kind := range []string{":instance/", ":volume/", ":fleet/", ":network-interface/", ":spot-instances-request/", ":launch-template/"} {
				if strings.Contains(r, kind) && len(s.Condition) == 0 {
					t.Errorf("statement %s grants %s on %s without a tag condition", s.Sid, s.Action, r)
				}
			}
		}
	}
}
