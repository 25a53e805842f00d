package requirements

import (
	"fmt"
	"testing"
)

// instanceTypeLabels are the labels of a typical instance type, as the
// catalog defines them.
func instanceTypeLabels() map[string]string {
	return map[string]string{
		"karpenter.k8s.aws/instance-capability-flex":                 "false",
		"karpenter.k8s.aws/instance-category":                        "m",
		"karpenter.k8s.aws/instance-cpu":                             "8",
		"karpenter.k8s.aws/instance-cpu-manufacturer":                "intel",
		"karpenter.k8s.aws/instance-cpu-sustained-clock-speed-mhz":   "3500",
		"karpenter.k8s.aws/instance-ebs-bandwidth":                   "10000",
		"karpenter.k8s.aws/instance-encryption-in-transit-supported": "true",
		"karpenter.k8s.aws/instance-family":                          "m6i",
		"karpenter.k8s.aws/instance-generation":                      "6",
		"karpenter.k8s.aws/instance-hypervisor":                      "nitro",
		"karpenter.k8s.aws/instance-memory":                          "32768",
		"karpenter.k8s.aws/instance-network-bandwidth":               "12500",
		"karpenter.k8s.aws/instance-size":                            "2xlarge",
		"kubernetes.io/arch":                                         "amd64",
		"kubernetes.io/os":                                           "linux",
		"node.kubernetes.io/instance-type":                           "m6i.2xlarge",
	}
}

// benchInputs returns an instance type's requirements (its labels plus the
// zones and capacity types it is offered in), a NodePool's, and a pod's.
func benchInputs(b *testing.B) (instanceType, nodePool, pod Requirements) {
	instanceType = FromLabels(instanceTypeLabels()).Add(
		in("us-east-1a", "us-east-1b", "us-east-1c").on(b, zone),
		in("on-demand", "spot").on(b, capacity),
	)
	nodePool = reqs(b,
		arch, in("amd64", "arm64"),
		capacity, in("spot", "on-demand"),
		"karpenter.k8s.aws/instance-category", in("c", "m", "r"),
		"karpenter.k8s.aws/instance-generation", gt(2),
		zone, in("us-east-1a", "us-east-1b"),
		"karpenter.sh/nodepool", in("default"),
		team, in("payments"),
	)
	pod = reqs(b,
		arch, in("amd64"),
		zone, in("us-east-1b", "us-east-1c"),
		capacity, notIn("spot"),
		team, in("payments"),
	)
	return instanceType, nodePool, pod
}

func BenchmarkCompatible(b *testing.B) {
	instanceType, nodePool, pod := benchInputs(b)
	claim := nodePool.Intersect(instanceType)
	incompatible := pod.Add(in("arm64").on(b, arch))
	for _, bc := range []struct {
		name      string
		have, pod Requirements
		undefined UndefinedPolicy
		wantErr   bool
	}{
		{name: "pod/claim", have: claim, pod: pod, undefined: RequireDefined},
		{name: "pod/nodepool-undefined-wellknown", have: nodePool, pod: pod.Add(exists().on(b, "karpenter.k8s.aws/instance-family")), undefined: AllowUndefinedWellKnown},
		{name: "nodepool/instance-type", have: instanceType, pod: nodePool, undefined: AllowUndefined},
		{name: "pod/claim-incompatible", have: claim, pod: incompatible, undefined: RequireDefined, wantErr: true},
	} {
		b.Run(bc.name, func(b *testing.B) {
			if err := bc.have.Compatible(bc.pod, bc.undefined); (err != nil) != bc.wantErr {
				b.Fatalf("Compatible = %v", err)
			}
			b.ReportAllocs()
			for b.Loop() {
				_ = bc.have.Compatible(bc.pod, bc.undefined)
			}
		})
	}
	b.Run("conflict/pod/claim-incompatible", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, found := claim.Conflict(incompatible, RequireDefined); !found {
				b.Fatal("want a conflict")
			}
		}
	})
	b.Run("intersects/pod/claim", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if !claim.Intersects(pod) {
				b.Fatal("want an intersection")
			}
		}
	})
}

func BenchmarkIntersect(b *testing.B) {
	instanceType, nodePool, pod := benchInputs(b)
	claim := nodePool.Intersect(instanceType)
	types := make([]string, 600)
	for i := range types {
		types[i] = fmt.Sprintf("type-%03d.large", i)
	}
	wide := claim.Add(in(types...).on(b, "node.kubernetes.io/instance-type"))
	for _, bc := range []struct {
		name string
		a, o Requirements
	}{
		{name: "nodepool/instance-type", a: nodePool, o: instanceType},
		{name: "claim/pod", a: claim, o: pod},
		{name: "claim-600-types/pod", a: wide, o: pod.Add(in("type-300.large", "type-301.large").on(b, "node.kubernetes.io/instance-type"))},
	} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				_ = bc.a.Intersect(bc.o)
			}
		})
	}
	b.Run("requirement/in-notin", func(b *testing.B) {
		x, y := in("a", "b", "c", "d").req(b), notIn("c").req(b)
		b.ReportAllocs()
		for b.Loop() {
			_ = x.Intersect(y)
		}
	})
}

func BenchmarkMatches(b *testing.B) {
	_, _, pod := benchInputs(b)
	labels := instanceTypeLabels()
	labels[zone] = "us-east-1b"
	labels[capacity] = "on-demand"
	labels[team] = "payments"
	b.ReportAllocs()
	for b.Loop() {
		if err := pod.Matches(labels); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkFromLabels(b *testing.B) {
	labels := instanceTypeLabels()
	b.ReportAllocs()
	for b.Loop() {
		_ = FromLabels(labels)
	}
}
