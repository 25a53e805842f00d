package validation

import (
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

func TestCheckSchedule(t *testing.T) {
	for _, tc := range []struct {
		schedule string
		severity Severity // "" when valid
		message  string
	}{
		{schedule: "0 9 * * mon-fri"},
		{schedule: "*/15 0-6 1,15 * *"},
		{schedule: "@daily"},
		{schedule: "@hourly"},
		{schedule: "@annually"},
		{schedule: "0 0 29 2 *"}, // leap days come round within five years
		{schedule: "61 * * * *", severity: SeverityError, message: "end of range (61) above maximum (59)"},
		{schedule: "0 24 * * *", severity: SeverityError, message: "above maximum (23)"},
		{schedule: "* * * *", severity: SeverityError, message: "expected exactly 5 fields, found 4"},
		{schedule: "0 9 * * * *", severity: SeverityError, message: "expected exactly 5 fields, found 6"},
		{schedule: "0 9 * * funday", severity: SeverityError, message: "failed to parse"},
		{schedule: "@dayly", severity: SeverityError, message: "unrecognized descriptor: @dayly"},
		{schedule: "TZ=Europe/Berlin 0 9 * * *", severity: SeverityError, message: "time zones are not supported"},
		{schedule: "CRON_TZ=Asia/Seoul 0 9 * * *", severity: SeverityError, message: "time zones are not supported"},
		{schedule: "0 0 30 2 *", severity: SeverityWarning, message: "never fires"},
	} {
		t.Run(tc.schedule, func(t *testing.T) {
			got := checkSchedule("spec.disruption.budgets[0].schedule", tc.schedule)
			if tc.severity == "" {
				if len(got) > 0 {
					t.Fatalf("want no problem, got:%s", dump(got))
				}
				return
			}
			if len(got) != 1 || got[0].Severity != tc.severity || !strings.Contains(got[0].Message, tc.message) || got[0].Fix == "" {
				t.Fatalf("want one %s containing %q with a fix, got:%s", tc.severity, tc.message, dump(got))
			}
			if got[0].Field != "spec.disruption.budgets[0].schedule" {
				t.Errorf("field = %q", got[0].Field)
			}
		})
	}
}

// nodePoolSpec builds a NodePool object from the YAML of its spec.
func nodePoolSpec(t *testing.T, spec string) map[string]interface{} {
	t.Helper()
	obj := map[string]interface{}{}
	if err := yaml.Unmarshal([]byte("spec:\n"+indent(spec, "  ")), &obj); err != nil {
		t.Fatal(err)
	}
	return obj
}

func indent(s, prefix string) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	for i, l := range lines {
		if l != "" {
			lines[i] = prefix + l
		}
	}
	return strings.Join(lines, "\n") + "\n"
}

func requirements(reqs string) string {
	return "template:\n  spec:\n    nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: default}\n    requirements:\n" + indent(reqs, "      ")
}

type want struct {
	field    string
	severity Severity
	message  string
	fix      string
}

func TestSemanticChecks(t *testing.T) {
	for _, tc := range []struct {
		name string
		kind string // NodePool unless set
		spec string
		want []want // nil: no problem at all
	}{
		// capacity type
		{name: "capacity-type In spot", spec: requirements(`- {key: karpenter.sh/capacity-type, operator: In, values: [spot]}`)},
		{name: "capacity-type In all", spec: requirements(`- {key: karpenter.sh/capacity-type, operator: In, values: [spot, on-demand, reserved]}`)},
		{name: "capacity-type In nothing known", spec: requirements(`- {key: karpenter.sh/capacity-type, operator: In, values: [Spot, ondemand]}`),
			want: []want{{"spec.template.spec.requirements[0].values", SeverityError, `allows none of spot, on-demand, reserved`, `write spot instead of "Spot"`}}},
		{name: "capacity-type In with one unknown", spec: requirements(`- {key: karpenter.sh/capacity-type, operator: In, values: [spot, ondemand]}`),
			want: []want{{"spec.template.spec.requirements[0].values", SeverityWarning, `"ondemand" is not a capacity type`, `write on-demand instead of "ondemand"`}}},
		{name: "capacity-type NotIn spot", spec: requirements(`- {key: karpenter.sh/capacity-type, operator: NotIn, values: [spot]}`)},
		{name: "capacity-type NotIn all", spec: requirements(`- {key: karpenter.sh/capacity-type, operator: NotIn, values: [reserved, spot, on-demand]}`),
			want: []want{{"spec.template.spec.requirements[0].values", SeverityError, "excludes spot, on-demand and reserved", "remove at least one"}}},
		{name: "capacity-type Exists", spec: requirements(`- {key: karpenter.sh/capacity-type, operator: Exists}`)},
		{name: "capacity-type DoesNotExist", spec: requirements(`- {key: karpenter.sh/capacity-type, operator: DoesNotExist}`),
			want: []want{{"spec.template.spec.requirements[0].operator", SeverityError, "DoesNotExist matches no capacity", "use In or NotIn"}}},
		// architecture
		{name: "arch amd64 and arm64", spec: requirements(`- {key: kubernetes.io/arch, operator: In, values: [amd64, arm64]}`)},
		{name: "arch x86_64", spec: requirements(`- {key: kubernetes.io/arch, operator: In, values: [amd64, x86_64]}`),
			want: []want{{"spec.template.spec.requirements[0].values[1]", SeverityWarning, `"x86_64" is not an architecture`, "use amd64"}}},
		{name: "arch aarch64", spec: requirements(`- {key: kubernetes.io/arch, operator: In, values: [aarch64]}`),
			want: []want{{"spec.template.spec.requirements[0].values[0]", SeverityWarning, `"aarch64" is not an architecture`, "use arm64"}}},
		{name: "arch riscv64", spec: requirements(`- {key: kubernetes.io/arch, operator: In, values: [riscv64]}`),
			want: []want{{"spec.template.spec.requirements[0].values[0]", SeverityWarning, `"riscv64" is not an architecture`, "use amd64 or arm64"}}},
		{name: "arch NotIn is not checked", spec: requirements(`- {key: kubernetes.io/arch, operator: NotIn, values: [x86_64]}`)},
		// beta label aliases
		{name: "beta arch alias", spec: requirements(`- {key: beta.kubernetes.io/arch, operator: In, values: [arm64]}`),
			want: []want{{"spec.template.spec.requirements[0].key", SeverityWarning, `"beta.kubernetes.io/arch" is a deprecated alias of "kubernetes.io/arch"`, "use key: kubernetes.io/arch"}}},
		{name: "beta arch alias with a bad value", spec: requirements(`- {key: beta.kubernetes.io/arch, operator: In, values: [x86_64]}`),
			want: []want{
				{"spec.template.spec.requirements[0].key", SeverityWarning, "deprecated alias", "kubernetes.io/arch"},
				{"spec.template.spec.requirements[0].values[0]", SeverityWarning, "not an architecture", "use amd64"},
			}},
		{name: "beta zone alias", spec: requirements(`- {key: failure-domain.beta.kubernetes.io/zone, operator: In, values: [us-east-1a]}`),
			want: []want{{"spec.template.spec.requirements[0].key", SeverityWarning, "deprecated alias", "use key: topology.kubernetes.io/zone"}}},
		{name: "beta instance-type alias", spec: requirements(`- {key: beta.kubernetes.io/instance-type, operator: In, values: [m6i.large]}`),
			want: []want{{"spec.template.spec.requirements[0].key", SeverityWarning, "deprecated alias", "use key: node.kubernetes.io/instance-type"}}},
		// node class references
		{name: "nodeClassRef EC2NodeClass", spec: "template:\n  spec:\n    nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: default}\n"},
		{name: "nodeClassRef other kind", spec: "template:\n  spec:\n    nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeTemplate, name: default}\n",
			want: []want{{"spec.template.spec.nodeClassRef.kind", SeverityError, `unsupported NodeClass kind "EC2NodeTemplate" in group karpenter.k8s.aws; the supported kinds are: EC2NodeClass`, "set kind: EC2NodeClass"}}},
		{name: "nodeClassRef other group", spec: "template:\n  spec:\n    nodeClassRef: {group: karpenter.kwok.sh, kind: KWOKNodeClass, name: default}\n",
			want: []want{{"spec.template.spec.nodeClassRef.group", SeverityError, `unsupported NodeClass group "karpenter.kwok.sh"; stevedore serves karpenter.k8s.aws/EC2NodeClass`, "set group: karpenter.k8s.aws"}}},
		{name: "nodeClassRef empty group is the CRD's to report", spec: "template:\n  spec:\n    nodeClassRef: {group: '', kind: EC2NodeClass, name: default}\n"},
		{name: "nodeClassRef NodeClaim other group", kind: kindNodeClaim, spec: "nodeClassRef: {group: example.com, kind: Foo, name: default}\n",
			want: []want{{"spec.nodeClassRef.group", SeverityError, "unsupported NodeClass group", "karpenter.k8s.aws"}}},
		// taints
		{name: "taints distinct", spec: "template:\n  spec:\n    taints: [{key: a, effect: NoSchedule}, {key: a, effect: NoExecute}]\n    startupTaints: [{key: b, effect: NoSchedule}]\n"},
		{name: "taint and startup taint alike", spec: "template:\n  spec:\n    taints: [{key: a, value: x, effect: NoSchedule}]\n    startupTaints: [{key: a, value: y, effect: NoSchedule}]\n",
			want: []want{{"spec.template.spec.startupTaints[0]", SeverityError, "duplicate taint Key/Effect pair a=NoSchedule (first at spec.template.spec.taints[0])", "remove one of the two taints"}}},
		{name: "two taints alike", spec: "template:\n  spec:\n    taints: [{key: a, effect: NoSchedule}, {key: b, effect: NoSchedule}, {key: a, effect: NoSchedule}]\n",
			want: []want{{"spec.template.spec.taints[2]", SeverityError, "duplicate taint Key/Effect pair a=NoSchedule", ""}}},
		{name: "NodeClaim taints alike", kind: kindNodeClaim, spec: "taints: [{key: a, effect: NoExecute}]\nstartupTaints: [{key: a, effect: NoExecute}]\n",
			want: []want{{"spec.startupTaints[0]", SeverityError, "duplicate taint", ""}}},
		// budgets
		{name: "budget 10%", spec: "disruption:\n  budgets: [{nodes: '10%'}]\n"},
		{name: "budget 0 forever", spec: "disruption:\n  budgets: [{nodes: '10%'}, {nodes: '0'}]\n",
			want: []want{{"spec.disruption.budgets[1].nodes", SeverityWarning, "blocks all voluntary disruption of this pool forever", "add a schedule and duration"}}},
		{name: "budget 0% forever", spec: "disruption:\n  budgets: [{nodes: '0%'}]\n",
			want: []want{{"spec.disruption.budgets[0].nodes", SeverityWarning, "blocks all voluntary disruption", ""}}},
		{name: "budget 0 for drift", spec: "disruption:\n  budgets: [{nodes: '0', reasons: [Drifted]}]\n"},
		{name: "budget 0 in a window", spec: "disruption:\n  budgets: [{nodes: '0', schedule: '0 9 * * mon-fri', duration: 8h}]\n"},
		{name: "budget bad cron", spec: "disruption:\n  budgets: [{nodes: '0', schedule: '0 9 * * mon-fry', duration: 8h}]\n",
			want: []want{{"spec.disruption.budgets[0].schedule", SeverityError, `invalid cron schedule "0 9 * * mon-fry"`, "five fields"}}},
		// consolidation
		{name: "consolidateAfter Never with WhenEmptyOrUnderutilized", spec: "disruption:\n  consolidationPolicy: WhenEmptyOrUnderutilized\n  consolidateAfter: Never\n"},
		{name: "consolidateAfter Never with WhenEmpty", spec: "disruption:\n  consolidationPolicy: WhenEmpty\n  consolidateAfter: Never\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			kind := tc.kind
			if kind == "" {
				kind = kindNodePool
			}
			got := semanticChecks(kind, nodePoolSpec(t, tc.spec))
			if len(got) != len(tc.want) {
				t.Fatalf("want %d problems, got:%s", len(tc.want), dump(got))
			}
			for _, w := range tc.want {
				p, ok := find(got, w.field, w.severity, w.message)
				if !ok {
					t.Errorf("no %s at %s containing %q; got:%s", w.severity, w.field, w.message, dump(got))
					continue
				}
				if p.Fix == "" || !strings.Contains(p.Fix, w.fix) {
					t.Errorf("fix %q does not contain %q", p.Fix, w.fix)
				}
			}
		})
	}
}

// TestSemanticChecksThroughTheValidator runs semantic checks through the
// whole pipeline: they see the defaulted object, and a semantic problem on a
// field the API server already reports is not repeated.
func TestSemanticChecksThroughTheValidator(t *testing.T) {
	v := testValidator(t)
	const base = `apiVersion: karpenter.k8s.aws/v1
kind: EC2NodeClass
metadata: {name: default}
spec:
  role: KarpenterNodeRole-my-cluster
  amiSelectorTerms: [{alias: al2023@latest}]
  subnetSelectorTerms: [{tags: {karpenter.sh/discovery: my-cluster}}]
  securityGroupSelectorTerms: [{tags: {karpenter.sh/discovery: my-cluster}}]
---
apiVersion: karpenter.sh/v1
kind: NodePool
metadata: {name: default}
spec:
  template:
    spec:
      nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: default}
      requirements: [{key: karpenter.sh/capacity-type, operator: In, values: [on-demand]}]
`
	t.Run("defaults are valid", func(t *testing.T) {
		if problems := validate(t, v, base); len(problems) > 0 {
			t.Errorf("want no problems, got:%s", dump(problems))
		}
	})
	t.Run("consolidateAfter Never with the default policy", func(t *testing.T) {
		problems := validate(t, v, base+"  disruption:\n    consolidateAfter: Never\n")
		if len(problems) > 0 {
			t.Errorf("want no problems, got:%s", dump(problems))
		}
	})
	t.Run("schedule rejected by the pattern is not parsed again", func(t *testing.T) {
		problems := validate(t, v, base+"  disruption:\n    budgets: [{nodes: '0', schedule: 'every day', duration: 8h}]\n")
		var at []Problem
		for _, p := range problems {
			if p.Field == "spec.disruption.budgets[0].schedule" {
				at = append(at, p)
			}
		}
		if len(at) != 1 || !strings.Contains(at[0].Message, "should match") {
			t.Errorf("want only the server's pattern error, got:%s", dump(at))
		}
	})
}
