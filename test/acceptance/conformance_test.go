package acceptance

import (
	"bytes"
	"context"
	"slices"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"github.com/stevedore-autoscaler/stevedore/api/validation"
)

// The conformance table holds manifests of the served kinds with the
// verdict that Karpenter v1.14.1 (the core CRDs as the AWS provider ships them,
// and the AWS provider's EC2NodeClass CRD) gives when they are created: accept,
// or reject with the field path the API server names. Each row is the base
// object of its kind with a merge patch applied (maps merge, lists and scalars
// replace, null removes), so that a row shows only what it is about.
//
// The verdicts follow the upstream CRDs' schemas and CEL rules. Where a rule
// sits decides the path: upstream checks requirement operators and values with
// rules on the requirements list, selector-term exclusivity with rules on the
// terms list, and label keys with rules on the labels map.

const baseNodePool = `
apiVersion: karpenter.sh/v1
kind: NodePool
metadata:
  name: conformance
spec:
  template:
    spec:
      nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: default}
      requirements:
      - {key: kubernetes.io/arch, operator: In, values: [amd64]}
`

const baseNodeClaim = `
apiVersion: karpenter.sh/v1
kind: NodeClaim
metadata:
  name: conformance
spec:
  nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: default}
  requirements:
  - {key: kubernetes.io/arch, operator: In, values: [amd64]}
`

const baseEC2NodeClass = `
apiVersion: karpenter.k8s.aws/v1
kind: EC2NodeClass
metadata:
  name: conformance
spec:
  role: KarpenterNodeRole-my-cluster
  amiSelectorTerms:
  - alias: al2023@latest
  subnetSelectorTerms:
  - tags: {karpenter.sh/discovery: my-cluster}
  securityGroupSelectorTerms:
  - tags: {karpenter.sh/discovery: my-cluster}
`

const baseCapacityBuffer = `
apiVersion: autoscaling.x-k8s.io/v1beta1
kind: CapacityBuffer
metadata:
  name: conformance
  namespace: default
spec:
  podTemplateRef: {name: chunk}
  replicas: 2
`

type conformanceRow struct {
	name  string
	base  string
	patch string
	// field is empty when Karpenter v1.14.1 accepts the manifest, and the
	// path the API server names when it rejects it.
	field string
}

func np(name, patch, field string) conformanceRow {
	return conformanceRow{name: "NodePool/" + name, base: baseNodePool, patch: patch, field: field}
}

func nc(name, patch, field string) conformanceRow {
	return conformanceRow{name: "NodeClaim/" + name, base: baseNodeClaim, patch: patch, field: field}
}

func ec2(name, patch, field string) conformanceRow {
	return conformanceRow{name: "EC2NodeClass/" + name, base: baseEC2NodeClass, patch: patch, field: field}
}

// cb rows are CapacityBuffers (autoscaling.x-k8s.io/v1beta1, as Karpenter
// v1.14.1 serves it).
func cb(name, patch, field string) conformanceRow {
	return conformanceRow{name: "CapacityBuffer/" + name, base: baseCapacityBuffer, patch: patch, field: field}
}

const accept = ""

var conformanceRows = []conformanceRow{
	// NodePool template labels: upstream restricts the karpenter.sh domain
	// (and its subdomains, and any domain that merely ends in karpenter.sh)
	// except capacity-type, karpenter.sh/nodepool, kubernetes.io/hostname, and
	// the karpenter.k8s.aws domain except its well-known labels and
	// ec2nodeclass. Other kubernetes.io and k8s.io keys are allowed.
	np("minimal", `{}`, accept),
	np("node-role label", `{spec: {template: {metadata: {labels: {node-role.kubernetes.io/worker: ""}}}}}`, accept),
	np("kubernetes.io/role label", `{spec: {template: {metadata: {labels: {kubernetes.io/role: worker}}}}}`, accept),
	np("app.kubernetes.io label", `{spec: {template: {metadata: {labels: {app.kubernetes.io/managed-by: helm}}}}}`, accept),
	np("k8s.io label", `{spec: {template: {metadata: {labels: {example.k8s.io/pool: a}}}}}`, accept),
	np("node.kubernetes.io label", `{spec: {template: {metadata: {labels: {node.kubernetes.io/pool: general}}}}}`, accept),
	np("capacity-type label", `{spec: {template: {metadata: {labels: {karpenter.sh/capacity-type: spot}}}}}`, accept),
	np("ec2nodeclass label", `{spec: {template: {metadata: {labels: {karpenter.k8s.aws/ec2nodeclass: default}}}}}`, accept),
	np("instance-family label", `{spec: {template: {metadata: {labels: {karpenter.k8s.aws/instance-family: m7i}}}}}`, accept),
	np("label key without a DNS-name shape", `{spec: {template: {metadata: {labels: {"my team": checkout}}}}}`, accept),
	np("hostname label", `{spec: {template: {metadata: {labels: {kubernetes.io/hostname: node-a}}}}}`, "spec.template.metadata.labels"),
	np("nodepool label", `{spec: {template: {metadata: {labels: {karpenter.sh/nodepool: other}}}}}`, "spec.template.metadata.labels"),
	np("karpenter.sh label", `{spec: {template: {metadata: {labels: {karpenter.sh/registered: "true"}}}}}`, "spec.template.metadata.labels"),
	np("karpenter.sh subdomain label", `{spec: {template: {metadata: {labels: {team.karpenter.sh/x: "y"}}}}}`, "spec.template.metadata.labels"),
	np("domain ending in karpenter.sh", `{spec: {template: {metadata: {labels: {mykarpenter.sh/x: "y"}}}}}`, "spec.template.metadata.labels"),
	np("karpenter.k8s.aws custom label", `{spec: {template: {metadata: {labels: {karpenter.k8s.aws/team: a}}}}}`, "spec.template.metadata.labels"),
	np("label value with a space", `{spec: {template: {metadata: {labels: {team: "check out"}}}}}`, "spec.template.metadata.labels.team"),

	// Requirements: keys are checked one by one; operators and values by
	// rules on the whole list. Values are not label-value checked.
	np("node-role requirement", `{spec: {template: {spec: {requirements: [{key: node-role.kubernetes.io/worker, operator: Exists}]}}}}`, accept),
	np("capacity-type requirement", `{spec: {template: {spec: {requirements: [{key: karpenter.sh/capacity-type, operator: In, values: [spot, on-demand]}]}}}}`, accept),
	np("tenancy requirement", `{spec: {template: {spec: {requirements: [{key: karpenter.k8s.aws/instance-tenancy, operator: In, values: [default]}]}}}}`, accept),
	np("value that is not a label value", `{spec: {template: {spec: {requirements: [{key: example.com/owner, operator: In, values: ["team a/b"]}]}}}}`, accept),
	np("hostname requirement", `{spec: {template: {spec: {requirements: [{key: kubernetes.io/hostname, operator: Exists}]}}}}`, "spec.template.spec.requirements[0].key"),
	np("nodepool requirement", `{spec: {template: {spec: {requirements: [{key: karpenter.sh/nodepool, operator: In, values: [a]}]}}}}`, "spec.template.spec.requirements[0].key"),
	np("karpenter.sh subdomain requirement", `{spec: {template: {spec: {requirements: [{key: x.karpenter.sh/y, operator: Exists}]}}}}`, "spec.template.spec.requirements[0].key"),
	np("Gte and Lte", `{spec: {template: {spec: {requirements: [{key: karpenter.k8s.aws/instance-generation, operator: Gte, values: ["6"]}, {key: karpenter.k8s.aws/instance-cpu, operator: Lte, values: ["32"]}]}}}}`, accept),
	np("Lte with two values", `{spec: {template: {spec: {requirements: [{key: karpenter.k8s.aws/instance-cpu, operator: Lte, values: ["2", "4"]}]}}}}`, "spec.template.spec.requirements"),
	np("Gt negative", `{spec: {template: {spec: {requirements: [{key: karpenter.k8s.aws/instance-cpu, operator: Gt, values: ["-1"]}]}}}}`, "spec.template.spec.requirements"),
	np("In without values", `{spec: {template: {spec: {requirements: [{key: example.com/team, operator: In, values: []}]}}}}`, "spec.template.spec.requirements"),
	np("minValues above values", `{spec: {template: {spec: {requirements: [{key: karpenter.k8s.aws/instance-family, operator: In, values: [m7i, c7i], minValues: 3}]}}}}`, "spec.template.spec.requirements"),
	np("unknown operator", `{spec: {template: {spec: {requirements: [{key: example.com/team, operator: Within, values: [a]}]}}}}`, "spec.template.spec.requirements[0].operator"),

	// Taints.
	np("GPU pool", `{spec: {template: {metadata: {labels: {example.com/accelerator: nvidia}}, spec: {taints: [{key: nvidia.com/gpu, value: "true", effect: NoSchedule}], requirements: [{key: karpenter.k8s.aws/instance-category, operator: In, values: [g, p]}, {key: karpenter.k8s.aws/instance-gpu-count, operator: Gt, values: ["0"]}, {key: karpenter.sh/capacity-type, operator: In, values: [on-demand]}]}}, limits: {nvidia.com/gpu: "16"}}}`, accept),
	np("taint key with a space", `{spec: {template: {spec: {taints: [{key: "dedicated team", effect: NoSchedule}]}}}}`, "spec.template.spec.taints[0].key"),
	np("taint value with a space", `{spec: {template: {spec: {taints: [{key: dedicated, value: "a b", effect: NoSchedule}]}}}}`, "spec.template.spec.taints[0].value"),
	np("taint effect misspelt", `{spec: {template: {spec: {startupTaints: [{key: example.com/agent, effect: NoScheduled}]}}}}`, "spec.template.spec.startupTaints[0].effect"),

	// Disruption.
	np("Balanced", `{spec: {disruption: {consolidationPolicy: Balanced, consolidateAfter: 5m}}}`, accept),
	np("budgets with schedules", `{spec: {disruption: {consolidationPolicy: WhenEmptyOrUnderutilized, consolidateAfter: 1m, budgets: [{nodes: "20%", reasons: [Empty, Drifted]}, {nodes: "0", schedule: "0 9 * * mon-fri", duration: 8h, reasons: [Underutilized]}, {nodes: "5"}]}}}`, accept),
	np("disruption without consolidateAfter", `{spec: {disruption: {consolidationPolicy: WhenEmpty}}}`, "spec.disruption.consolidateAfter"),
	np("unknown consolidation policy", `{spec: {disruption: {consolidationPolicy: WhenIdle, consolidateAfter: 1m}}}`, "spec.disruption.consolidationPolicy"),
	np("schedule without duration", `{spec: {disruption: {consolidateAfter: 1m, budgets: [{nodes: "0", schedule: "@daily"}]}}}`, "spec.disruption.budgets"),
	np("duplicate budget reasons", `{spec: {disruption: {consolidateAfter: 1m, budgets: [{nodes: "1", reasons: [Drifted, Drifted]}]}}}`, "spec.disruption.budgets[0].reasons[1]"),
	np("budget nodes above 100%", `{spec: {disruption: {consolidateAfter: 1m, budgets: [{nodes: "110%"}]}}}`, "spec.disruption.budgets[0].nodes"),

	// Static NodePools.
	np("static", `{spec: {replicas: 3, limits: {nodes: "5"}, template: {spec: {requirements: [{key: node.kubernetes.io/instance-type, operator: In, values: [m7i.large]}]}}}}`, accept),
	np("static with weight", `{spec: {replicas: 3, weight: 10}}`, "spec"),
	np("static with a cpu limit", `{spec: {replicas: 3, limits: {cpu: "64"}}}`, "spec"),
	np("negative replicas", `{spec: {replicas: -1}}`, "spec.replicas"),

	// Other NodePool fields.
	np("weight above 100", `{spec: {weight: 101}}`, "spec.weight"),
	np("nodeClassRef group with a version", `{spec: {template: {spec: {nodeClassRef: {group: karpenter.k8s.aws/v1}}}}}`, "spec.template.spec.nodeClassRef.group"),
	np("expireAfter in days", `{spec: {template: {spec: {expireAfter: 30d}}}}`, "spec.template.spec.expireAfter"),

	// NodeClaims share the requirement and taint rules; karpenter.sh/nodepool
	// may be required.
	nc("Gte", `{spec: {requirements: [{key: karpenter.k8s.aws/instance-memory, operator: Gte, values: ["8192"]}]}}`, accept),
	nc("nodepool requirement", `{spec: {requirements: [{key: karpenter.sh/nodepool, operator: In, values: [default]}]}}`, accept),
	nc("Lt not a number", `{spec: {requirements: [{key: karpenter.k8s.aws/instance-cpu, operator: Lt, values: [eight]}]}}`, "spec.requirements"),
	nc("hostname requirement", `{spec: {requirements: [{key: kubernetes.io/hostname, operator: In, values: [a]}]}}`, "spec.requirements[0].key"),
	nc("taint key with a space", `{spec: {taints: [{key: "a b", effect: NoExecute}]}}`, "spec.taints[0].key"),

	// EC2NodeClass.
	ec2("AL2023 alias", `{}`, accept),
	ec2("Bottlerocket", `{spec: {amiFamily: Bottlerocket, amiSelectorTerms: [{alias: bottlerocket@v1.26.0}], userData: "[settings.kubernetes]\nmax-pods = 110\n", blockDeviceMappings: [{deviceName: /dev/xvda, ebs: {volumeSize: 4Gi, volumeType: gp3, encrypted: true}}, {deviceName: /dev/xvdb, rootVolume: true, ebs: {volumeSize: 100Gi, volumeType: gp3, encrypted: true}}]}}`, accept),
	ec2("AL2 with an instance profile", `{spec: {role: null, instanceProfile: KarpenterNodeInstanceProfile, amiFamily: AL2, amiSelectorTerms: [{name: "amazon-eks-node-1.33-*", owner: amazon}]}}`, accept),
	ec2("Windows 2025", `{spec: {amiSelectorTerms: [{alias: windows2025@latest}]}}`, accept),
	ec2("no spec", `{spec: null}`, accept),
	ec2("role and instance profile", `{spec: {instanceProfile: KarpenterNodeInstanceProfile}}`, "spec"),
	ec2("alias with ssmParameter", `{spec: {amiSelectorTerms: [{alias: al2023@latest, ssmParameter: /my/ami}]}}`, accept),
	ec2("alias with name", `{spec: {amiSelectorTerms: [{alias: al2023@latest, name: my-ami}]}}`, "spec.amiSelectorTerms"),
	ec2("AMI id with name in one of several terms", `{spec: {amiFamily: AL2023, amiSelectorTerms: [{id: ami-0123456789abcdef0, name: my-ami}, {tags: {team: a}}]}}`, "spec.amiSelectorTerms"),
	ec2("AMI id with ssmParameter", `{spec: {amiFamily: AL2023, amiSelectorTerms: [{id: ami-0123456789abcdef0, ssmParameter: /my/ami}]}}`, accept),
	ec2("AMI id in upper case", `{spec: {amiFamily: AL2023, amiSelectorTerms: [{id: AMI-0123}]}}`, "spec.amiSelectorTerms[0].id"),
	ec2("subnet id with tags in one of two terms", `{spec: {subnetSelectorTerms: [{id: subnet-0123456789abcdef0, tags: {a: b}}, {tags: {karpenter.sh/discovery: my-cluster}}]}}`, accept),
	ec2("subnet id with tags in every term", `{spec: {subnetSelectorTerms: [{id: subnet-0123456789abcdef0, tags: {a: b}}]}}`, "spec.subnetSelectorTerms"),
	ec2("subnet id with a prefix", `{spec: {subnetSelectorTerms: [{id: my-subnet-0abc}]}}`, accept),
	ec2("subnet id in upper case", `{spec: {subnetSelectorTerms: [{id: subnet-ABC}]}}`, "spec.subnetSelectorTerms[0].id"),
	ec2("security group name with id in one of two terms", `{spec: {securityGroupSelectorTerms: [{id: sg-0123456789abcdef0, name: nodes}, {tags: {a: b}}]}}`, accept),
	ec2("security group name with tags in every term", `{spec: {securityGroupSelectorTerms: [{name: nodes, tags: {a: b}}]}}`, "spec.securityGroupSelectorTerms"),
	ec2("capacity reservation id with owner in one of two terms", `{spec: {capacityReservationSelectorTerms: [{id: cr-0123456789abcdef0, ownerID: "123456789012"}, {id: cr-0123456789abcdef1}]}}`, accept),
	ec2("capacity reservation id with tags in every term", `{spec: {capacityReservationSelectorTerms: [{id: cr-0123456789abcdef0, tags: {a: b}}]}}`, "spec.capacityReservationSelectorTerms"),
	ec2("sixty tags", `{spec: {tags: {t01: a, t02: a, t03: a, t04: a, t05: a, t06: a, t07: a, t08: a, t09: a, t10: a, t11: a, t12: a, t13: a, t14: a, t15: a, t16: a, t17: a, t18: a, t19: a, t20: a, t21: a, t22: a, t23: a, t24: a, t25: a, t26: a, t27: a, t28: a, t29: a, t30: a, t31: a, t32: a, t33: a, t34: a, t35: a, t36: a, t37: a, t38: a, t39: a, t40: a, t41: a, t42: a, t43: a, t44: a, t45: a, t46: a, t47: a, t48: a, t49: a, t50: a, t51: a, t52: a, t53: a, t54: a, t55: a, t56: a, t57: a, t58: a, t59: a, t60: a}}}`, accept),
	ec2("tag with the kubernetes.io/cluster prefix", `{spec: {tags: {kubernetes.io/clusterName: a}}}`, "spec.tags"),
	ec2("kubelet evictionHard empty value", `{spec: {kubelet: {maxPods: 110, evictionHard: {memory.available: ""}}}}`, accept),
	ec2("kubelet evictionHard above 100%", `{spec: {kubelet: {evictionHard: {memory.available: 101%}}}}`, "spec.kubelet.evictionHard.memory.available"),
	ec2("kubelet negative kubeReserved", `{spec: {kubelet: {kubeReserved: {cpu: "-1"}}}}`, "spec.kubelet.kubeReserved"),
	ec2("volume above 64000G", `{spec: {blockDeviceMappings: [{deviceName: /dev/xvda, ebs: {volumeSize: 65000G}}]}}`, "spec.blockDeviceMappings[0].ebs.volumeSize"),
	ec2("EFA network interfaces", `{spec: {networkInterfaces: [{networkCardIndex: 0, deviceIndex: 0, interfaceType: interface}, {networkCardIndex: 1, deviceIndex: 0, interfaceType: efa-only}, {networkCardIndex: 2, deviceIndex: 0, interfaceType: efa-only}]}}`, accept),
	ec2("network interfaces without the primary", `{spec: {networkInterfaces: [{networkCardIndex: 1, deviceIndex: 0, interfaceType: efa-only}]}}`, "spec.networkInterfaces"),
	ec2("unknown interface type", `{spec: {networkInterfaces: [{networkCardIndex: 0, deviceIndex: 0, interfaceType: efa}]}}`, "spec.networkInterfaces[0].interfaceType"),
	ec2("ipPrefixCount", `{spec: {ipPrefixCount: 2}}`, accept),
	ec2("negative ipPrefixCount", `{spec: {ipPrefixCount: -1}}`, "spec.ipPrefixCount"),
	ec2("placement group by name", `{spec: {placementGroupSelector: {name: training}}}`, accept),
	ec2("placement group by name and id", `{spec: {placementGroupSelector: {name: training, id: pg-0123456789abcdef0}}}`, "spec.placementGroupSelector"),
	ec2("connection tracking", `{spec: {connectionTracking: {tcpEstablishedTimeout: 300, udpStreamTimeout: 120, udpTimeout: 30}}}`, accept),
	ec2("connection tracking UDP timeout too short", `{spec: {connectionTracking: {udpTimeout: 20}}}`, "spec.connectionTracking.udpTimeout"),
	ec2("nested virtualization", `{spec: {cpuOptions: {nestedVirtualization: enabled}}}`, accept),
	// CapacityBuffer: exactly the two CEL rules and the minimums and
	// required names of the upstream CRD; neither reference, an unsupported
	// kind or a percentage without a workload are accepted (the controller
	// reports them in status).
	cb("pod template with replicas", `{}`, accept),
	cb("pod template with limits", `{spec: {replicas: null, limits: {cpu: "4"}}}`, accept),
	cb("pod template alone", `{spec: {replicas: null}}`, "spec"),
	cb("both references", `{spec: {scalableRef: {apiGroup: apps, kind: Deployment, name: web}}}`, "spec"),
	cb("scalable ref with percentage", `{spec: {podTemplateRef: null, replicas: null, scalableRef: {apiGroup: apps, kind: Deployment, name: web}, percentage: 20}}`, accept),
	cb("scalable ref without group", `{spec: {podTemplateRef: null, scalableRef: {kind: StatefulSet, name: db}}}`, accept),
	cb("scalable ref of another kind", `{spec: {podTemplateRef: null, scalableRef: {apiGroup: argoproj.io, kind: Rollout, name: web}}}`, accept),
	cb("scalable ref without name", `{spec: {podTemplateRef: null, scalableRef: {kind: Deployment}}}`, "spec.scalableRef.name"),
	cb("scalable ref empty kind", `{spec: {podTemplateRef: null, scalableRef: {kind: "", name: web}}}`, "spec.scalableRef.kind"),
	cb("neither reference", `{spec: {podTemplateRef: null}}`, accept),
	cb("empty pod template name", `{spec: {podTemplateRef: {name: ""}}}`, "spec.podTemplateRef.name"),
	cb("negative replicas", `{spec: {replicas: -1}}`, "spec.replicas"),
	cb("negative percentage", `{spec: {percentage: -5}}`, "spec.percentage"),
	cb("zero replicas", `{spec: {replicas: 0}}`, accept),
	cb("other strategy", `{spec: {provisioningStrategy: example.com/passive}}`, accept),
	cb("limit not a quantity", `{spec: {limits: {cpu: lots}}}`, "spec.limits.cpu"),
}

// conformanceObject builds a row's object: its base with the patch merged in.
func conformanceObject(t *testing.T, r conformanceRow) *unstructured.Unstructured {
	t.Helper()
	var base, patch map[string]interface{}
	if err := yaml.Unmarshal([]byte(r.base), &base); err != nil {
		t.Fatalf("base: %v", err)
	}
	if err := yaml.Unmarshal([]byte(r.patch), &patch); err != nil {
		t.Fatalf("patch: %v", err)
	}
	mergeInto(base, patch)
	return &unstructured.Unstructured{Object: base}
}

// mergeInto applies a JSON merge patch (RFC 7386) to dst.
func mergeInto(dst, patch map[string]interface{}) {
	for k, v := range patch {
		if v == nil {
			delete(dst, k)
			continue
		}
		pm, ok := v.(map[string]interface{})
		dm, dok := dst[k].(map[string]interface{})
		if ok && dok {
			mergeInto(dm, pm)
			continue
		}
		dst[k] = v
	}
}

// TestConformance checks every row of the conformance table twice: with the
// offline validator and by creating the object (dry run) on the API server
// with stevedore's CRDs installed. Both must give the row's verdict, and for a
// rejection both must name the row's field path.
func TestConformance(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	create := metav1.CreateOptions{FieldValidation: metav1.FieldValidationStrict, DryRun: []string{metav1.DryRunAll}}
	names := map[string]bool{}
	for _, r := range conformanceRows {
		if names[r.name] {
			t.Fatalf("two rows are named %q", r.name)
		}
		names[r.name] = true
		t.Run(r.name, func(t *testing.T) {
			obj := conformanceObject(t, r)
			doc, err := yaml.Marshal(obj.Object)
			if err != nil {
				t.Fatal(err)
			}
			problems, err := validator.Documents(r.name, bytes.NewReader(doc))
			if err != nil {
				t.Fatal(err)
			}
			var offline []string
			for _, p := range problems {
				if p.Severity == validation.SeverityError {
					offline = append(offline, p.Field)
				}
			}
			switch {
			case r.field == "" && len(offline) > 0:
				t.Errorf("offline: rejected at %v, Karpenter v1.14.1 accepts it; problems:\n%s", offline, problemList(problems))
			case r.field != "" && !slices.Contains(offline, r.field):
				t.Errorf("offline: errors at %v, Karpenter v1.14.1 rejects it at %s; problems:\n%s", offline, r.field, problemList(problems))
			}

			ri, err := resourceFor(obj)
			if err != nil {
				t.Fatal(err)
			}
			_, err = ri.Create(ctx, obj.DeepCopy(), create)
			switch {
			case r.field == "" && err != nil:
				t.Errorf("API server: rejected (%v), Karpenter v1.14.1 accepts it", err)
			case r.field != "" && err == nil:
				t.Errorf("API server: accepted, Karpenter v1.14.1 rejects it at %s", r.field)
			case r.field != "" && !slices.Contains(serverFields(err), r.field):
				t.Errorf("API server: rejected at %v, Karpenter v1.14.1 rejects it at %s (%v)", serverFields(err), r.field, err)
			}
		})
	}
	if len(conformanceRows) < 60 {
		t.Errorf("the table has %d rows; it is meant to cover at least 60 manifests", len(conformanceRows))
	}
}

func problemList(problems []validation.Problem) string {
	var b bytes.Buffer
	for _, p := range problems {
		b.WriteString("  " + p.String() + "\n")
	}
	return b.String()
}

// TestStaticNodePoolUpdates checks, on the API server, what a create cannot
// show: a NodePool cannot switch between static and dynamic, and a static
// NodePool scales through the scale subresource (kubectl scale), which sets
// spec.replicas and reads status.nodes.
func TestStaticNodePoolUpdates(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	deleteServedObjects(ctx, t)
	obj := conformanceObject(t, np("static pool", `{metadata: {name: static-updates}, spec: {replicas: 2, limits: {nodes: "4"}}}`, accept))
	ri, err := resourceFor(obj)
	if err != nil {
		t.Fatal(err)
	}
	created, err := ri.Create(ctx, obj, metav1.CreateOptions{FieldValidation: metav1.FieldValidationStrict})
	if err != nil {
		t.Fatalf("creating a static NodePool: %v", err)
	}

	scale, err := ri.Get(ctx, created.GetName(), metav1.GetOptions{}, "scale")
	if err != nil {
		t.Fatalf("reading the scale subresource: %v", err)
	}
	if n, _, _ := unstructured.NestedInt64(scale.Object, "spec", "replicas"); n != 2 {
		t.Errorf("scale spec.replicas = %d, want 2", n)
	}
	if err := unstructured.SetNestedField(scale.Object, int64(3), "spec", "replicas"); err != nil {
		t.Fatal(err)
	}
	if _, err := ri.Update(ctx, scale, metav1.UpdateOptions{}, "scale"); err != nil {
		t.Fatalf("scaling the NodePool: %v", err)
	}
	got, err := ri.Get(ctx, created.GetName(), metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if n, _, _ := unstructured.NestedInt64(got.Object, "spec", "replicas"); n != 3 {
		t.Errorf("after scaling, spec.replicas = %d, want 3", n)
	}

	unstructured.RemoveNestedField(got.Object, "spec", "replicas")
	_, err = ri.Update(ctx, got, metav1.UpdateOptions{DryRun: []string{metav1.DryRunAll}})
	if err == nil {
		t.Fatal("the API server let a static NodePool become dynamic")
	}
	if fields := serverFields(err); !slices.Contains(fields, "spec") {
		t.Errorf("switching to dynamic rejected at %v, want spec (%v)", fields, err)
	}
}
