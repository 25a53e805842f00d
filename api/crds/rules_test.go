package crds_test

import (
	"strings"
	"testing"
)

func TestNodePoolAdmission(t *testing.T) {
	runAdmissionCases(t, []admissionCase{
		{name: "minimal", kind: "NodePool"},
		{name: "full", kind: "NodePool", patch: `
spec:
  template:
    metadata:
      labels: {team: checkout, example.com/tier: web, node-restriction.kubernetes.io/pool: a, karpenter.sh/capacity-type: spot, topology.kubernetes.io/zone: us-east-1a, karpenter.k8s.aws/instance-family: m6i}
      annotations: {example.com/owner: me}
    spec:
      taints: [{key: dedicated, value: web, effect: NoSchedule}]
      startupTaints: [{key: example.com/agent-not-ready, effect: NoExecute}]
      requirements:
      - {key: karpenter.k8s.aws/instance-category, operator: In, values: [c, m, r], minValues: 2}
      - {key: karpenter.k8s.aws/instance-generation, operator: Gt, values: ["5"]}
      - {key: kubernetes.io/arch, operator: Exists}
      - {key: example.com/gpu, operator: DoesNotExist}
      terminationGracePeriod: 48h
      expireAfter: Never
  disruption:
    consolidationPolicy: WhenEmpty
    consolidateAfter: 1h30m
    budgets:
    - {nodes: "0", schedule: "0 9 * * mon-fri", duration: 8h, reasons: [Underutilized, Drifted]}
    - {nodes: "100%", schedule: "@daily", duration: 1h30m}
    - {nodes: "5"}
  limits: {cpu: "1000", memory: 1000Gi, nodes: "50"}
  weight: 100
`},

		// Karpenter v1.14 no longer restricts the kubernetes.io and k8s.io
		// domains, so these are accepted.
		{name: "label in kubernetes.io", kind: "NodePool", patch: `{spec: {template: {metadata: {labels: {kubernetes.io/role: worker}}}}}`},
		{name: "label in a kubernetes.io subdomain", kind: "NodePool", patch: `{spec: {template: {metadata: {labels: {node-role.kubernetes.io/worker: ""}}}}}`},
		{name: "label in k8s.io", kind: "NodePool", patch: `{spec: {template: {metadata: {labels: {example.k8s.io/x: "y"}}}}}`},
		{name: "label in a domain ending in karpenter.sh", kind: "NodePool", patch: `{spec: {template: {metadata: {labels: {mykarpenter.sh/x: "y"}}}}}`, want: "label keys in the karpenter.sh domain are set by stevedore"},
		{name: "label in karpenter.sh", kind: "NodePool", patch: `{spec: {template: {metadata: {labels: {karpenter.sh/registered: "true"}}}}}`, want: "label keys in the karpenter.sh domain are set by stevedore"},
		{name: "label in karpenter.k8s.aws", kind: "NodePool", patch: `{spec: {template: {metadata: {labels: {karpenter.k8s.aws/placement-group-id: x}}}}}`, want: "label keys in the karpenter.k8s.aws domain are set by stevedore"},
		{name: "label ec2nodeclass", kind: "NodePool", patch: `{spec: {template: {metadata: {labels: {karpenter.k8s.aws/ec2nodeclass: x}}}}}`},
		{name: "label nodepool", kind: "NodePool", patch: `{spec: {template: {metadata: {labels: {karpenter.sh/nodepool: x}}}}}`, want: "karpenter.sh/nodepool cannot be set"},
		{name: "label hostname", kind: "NodePool", patch: `{spec: {template: {metadata: {labels: {kubernetes.io/hostname: x}}}}}`, want: "kubernetes.io/hostname cannot be set"},
		// The CRD does not check the form of label keys (Karpenter's does not
		// either); stevedore reports a malformed key when it validates the
		// NodePool at run time.
		{name: "label key malformed", kind: "NodePool", patch: `{spec: {template: {metadata: {labels: {"my team": x}}}}}`},
		{name: "label value malformed", kind: "NodePool", patch: `{spec: {template: {metadata: {labels: {team: "check out"}}}}}`, want: "should match"},
		{name: "label value too long", kind: "NodePool", patch: `{spec: {template: {metadata: {labels: {team: aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa}}}}}`, want: "may not be more than 63"},

		{name: "In without values", kind: "NodePool", patch: `{spec: {template: {spec: {requirements: [{key: team, operator: In}]}}}}`, want: "operator In needs at least one value"},
		{name: "In with empty values", kind: "NodePool", patch: `{spec: {template: {spec: {requirements: [{key: team, operator: In, values: []}]}}}}`, want: "operator In needs at least one value"},
		{name: "Gt not a number", kind: "NodePool", patch: `{spec: {template: {spec: {requirements: [{key: karpenter.k8s.aws/instance-cpu, operator: Gt, values: [four]}]}}}}`, want: "operators Gt, Lt, Gte and Lte need exactly one value"},
		{name: "Lt negative", kind: "NodePool", patch: `{spec: {template: {spec: {requirements: [{key: karpenter.k8s.aws/instance-cpu, operator: Lt, values: ["-1"]}]}}}}`, want: "operators Gt, Lt, Gte and Lte need exactly one value"},
		{name: "Gt two values", kind: "NodePool", patch: `{spec: {template: {spec: {requirements: [{key: karpenter.k8s.aws/instance-cpu, operator: Gt, values: ["1", "2"]}]}}}}`, want: "operators Gt, Lt, Gte and Lte need exactly one value"},
		{name: "Lt without values", kind: "NodePool", patch: `{spec: {template: {spec: {requirements: [{key: karpenter.k8s.aws/instance-cpu, operator: Lt}]}}}}`, want: "operators Gt, Lt, Gte and Lte need exactly one value"},
		{name: "minValues above values", kind: "NodePool", patch: `{spec: {template: {spec: {requirements: [{key: node.kubernetes.io/instance-type, operator: In, values: [a, b], minValues: 3}]}}}}`, want: "minValues is larger than the number of values"},
		{name: "minValues too large", kind: "NodePool", patch: `{spec: {template: {spec: {requirements: [{key: node.kubernetes.io/instance-type, operator: Exists, minValues: 51}]}}}}`, want: "should be less than or equal to 50"},
		{name: "minValues zero", kind: "NodePool", patch: `{spec: {template: {spec: {requirements: [{key: node.kubernetes.io/instance-type, operator: Exists, minValues: 0}]}}}}`, want: "should be greater than or equal to 1"},
		{name: "unknown operator", kind: "NodePool", patch: `{spec: {template: {spec: {requirements: [{key: team, operator: Within, values: ["1"]}]}}}}`, want: "Unsupported value"},
		{name: "requirement on nodepool", kind: "NodePool", patch: `{spec: {template: {spec: {requirements: [{key: karpenter.sh/nodepool, operator: In, values: [x]}]}}}}`, want: "karpenter.sh/nodepool cannot be required in a NodePool"},
		{name: "requirement on hostname", kind: "NodePool", patch: `{spec: {template: {spec: {requirements: [{key: kubernetes.io/hostname, operator: Exists}]}}}}`, want: "kubernetes.io/hostname cannot be required"},
		{name: "requirement in karpenter.sh", kind: "NodePool", patch: `{spec: {template: {spec: {requirements: [{key: karpenter.sh/initialized, operator: Exists}]}}}}`, want: "keys in the karpenter.sh domain are reserved"},
		{name: "requirement in kubernetes.io", kind: "NodePool", patch: `{spec: {template: {spec: {requirements: [{key: kubernetes.io/role, operator: Exists}]}}}}`},
		{name: "requirement in k8s.io", kind: "NodePool", patch: `{spec: {template: {spec: {requirements: [{key: k8s.io/x, operator: Exists}]}}}}`},
		{name: "requirement in karpenter.k8s.aws", kind: "NodePool", patch: `{spec: {template: {spec: {requirements: [{key: karpenter.k8s.aws/foo, operator: Exists}]}}}}`, want: "keys in the karpenter.k8s.aws domain are reserved"},
		{name: "requirement on a beta key", kind: "NodePool", patch: `{spec: {template: {spec: {requirements: [{key: failure-domain.beta.kubernetes.io/zone, operator: In, values: [us-east-1a]}]}}}}`},
		{name: "requirement key malformed", kind: "NodePool", patch: `{spec: {template: {spec: {requirements: [{key: "bad key", operator: Exists}]}}}}`, want: "should match"},
		{name: "requirements missing", kind: "NodePool", patch: `{spec: {template: {spec: {requirements: null}}}}`, want: "Required value"},

		{name: "nodeClassRef name empty", kind: "NodePool", patch: `{spec: {template: {spec: {nodeClassRef: {name: ""}}}}}`, want: "nodeClassRef.name must not be empty"},
		{name: "nodeClassRef kind empty", kind: "NodePool", patch: `{spec: {template: {spec: {nodeClassRef: {kind: ""}}}}}`, want: "nodeClassRef.kind must not be empty"},
		{name: "nodeClassRef group empty", kind: "NodePool", patch: `{spec: {template: {spec: {nodeClassRef: {group: ""}}}}}`, want: "nodeClassRef.group must not be empty"},
		{name: "nodeClassRef group with version", kind: "NodePool", patch: `{spec: {template: {spec: {nodeClassRef: {group: karpenter.k8s.aws/v1}}}}}`, want: "should match '^[^/]*$'"},
		{name: "nodeClassRef group missing", kind: "NodePool", patch: `{spec: {template: {spec: {nodeClassRef: {group: null}}}}}`, want: "Required value"},
		{name: "nodeClassRef name change", kind: "NodePool", old: `{spec: {template: {spec: {nodeClassRef: {name: old}}}}}`, patch: `{spec: {template: {spec: {nodeClassRef: {name: new}}}}}`},
		{name: "nodeClassRef group change", kind: "NodePool", old: `{}`, patch: `{spec: {template: {spec: {nodeClassRef: {group: example.com}}}}}`, want: "nodeClassRef.group cannot change"},
		{name: "nodeClassRef kind change", kind: "NodePool", old: `{}`, patch: `{spec: {template: {spec: {nodeClassRef: {kind: OtherNodeClass}}}}}`, want: "nodeClassRef.kind cannot change"},
		// Static NodePools (upstream's rules on spec).
		{name: "static", kind: "NodePool", patch: `{spec: {replicas: 2, limits: {nodes: "4"}}}`},
		{name: "static scaled", kind: "NodePool", old: `{spec: {replicas: 2}}`, patch: `{spec: {replicas: 5}}`},
		{name: "dynamic to static", kind: "NodePool", old: `{}`, patch: `{spec: {replicas: 2}}`, want: "a NodePool cannot switch between static (replicas set) and dynamic (replicas unset)"},
		{name: "static to dynamic", kind: "NodePool", old: `{spec: {replicas: 2}}`, patch: `{spec: {replicas: null}}`, want: "a NodePool cannot switch between static (replicas set) and dynamic (replicas unset)"},
		{name: "static with weight", kind: "NodePool", patch: `{spec: {replicas: 2, weight: 10}}`, want: "a static NodePool (replicas set) cannot have a weight"},
		{name: "static with a memory limit", kind: "NodePool", patch: `{spec: {replicas: 2, limits: {memory: 10Gi, nodes: "3"}}}`, want: "a static NodePool (replicas set) supports only limits.nodes"},
		{name: "Balanced", kind: "NodePool", patch: `{spec: {disruption: {consolidationPolicy: Balanced, consolidateAfter: 1m}}}`},
		{name: "Gte and Lte", kind: "NodePool", patch: `{spec: {template: {spec: {requirements: [{key: karpenter.k8s.aws/instance-cpu, operator: Gte, values: ["4"]}, {key: karpenter.k8s.aws/instance-cpu, operator: Lte, values: ["64"]}]}}}}`},

		{name: "taint effect", kind: "NodePool", patch: `{spec: {template: {spec: {taints: [{key: a, effect: NoScheduel}]}}}}`, want: "Unsupported value"},
		{name: "taint key malformed", kind: "NodePool", patch: `{spec: {template: {spec: {taints: [{key: "a b", effect: NoSchedule}]}}}}`, want: "should match"},
		{name: "taint value malformed", kind: "NodePool", patch: `{spec: {template: {spec: {taints: [{key: a, value: "x y", effect: NoSchedule}]}}}}`, want: "should match"},
		{name: "startup taint effect", kind: "NodePool", patch: `{spec: {template: {spec: {startupTaints: [{key: a, effect: ""}]}}}}`, want: "Unsupported value"},
		{name: "terminationGracePeriod in days", kind: "NodePool", patch: `{spec: {template: {spec: {terminationGracePeriod: 2d}}}}`, want: "should match"},
		{name: "terminationGracePeriod Never", kind: "NodePool", patch: `{spec: {template: {spec: {terminationGracePeriod: Never}}}}`, want: "should match"},
		{name: "expireAfter in days", kind: "NodePool", patch: `{spec: {template: {spec: {expireAfter: 30d}}}}`, want: "should match"},
		{name: "expireAfter Never", kind: "NodePool", patch: `{spec: {template: {spec: {expireAfter: Never}}}}`},

		{name: "schedule without duration", kind: "NodePool", patch: `{spec: {disruption: {consolidateAfter: 1m, budgets: [{nodes: "0", schedule: "@daily"}]}}}`, want: "schedule and duration must be set together"},
		{name: "duration without schedule", kind: "NodePool", patch: `{spec: {disruption: {consolidateAfter: 1m, budgets: [{nodes: "0", duration: 1h}]}}}`, want: "schedule and duration must be set together"},
		{name: "disruption without consolidateAfter", kind: "NodePool", patch: `{spec: {disruption: {consolidationPolicy: WhenEmpty}}}`, want: "spec.disruption.consolidateAfter: Required value"},
		{name: "budget reasons repeated", kind: "NodePool", patch: `{spec: {disruption: {consolidateAfter: 1m, budgets: [{nodes: "1", reasons: [Empty, Empty]}]}}}`, want: "Duplicate value"},
		{name: "budget nodes over 100%", kind: "NodePool", patch: `{spec: {disruption: {budgets: [{nodes: "150%"}]}}}`, want: "should match"},
		{name: "budget nodes negative", kind: "NodePool", patch: `{spec: {disruption: {budgets: [{nodes: "-1"}]}}}`, want: "should match"},
		{name: "budget duration in seconds", kind: "NodePool", patch: `{spec: {disruption: {budgets: [{nodes: "1", schedule: "@hourly", duration: 30s}]}}}`, want: "should match"},
		{name: "budget duration as written back", kind: "NodePool", patch: `{spec: {disruption: {consolidateAfter: 1m, budgets: [{nodes: "1", schedule: "@hourly", duration: 1h30m0s}]}}}`},
		{name: "budget schedule with four fields", kind: "NodePool", patch: `{spec: {disruption: {budgets: [{nodes: "1", schedule: "0 9 * *", duration: 1h}]}}}`, want: "should match"},
		// Karpenter's pattern only asks for five fields at the end; the
		// offline validator's cron check rejects the time zone.
		{name: "budget schedule with a time zone", kind: "NodePool", patch: `{spec: {disruption: {consolidateAfter: 1m, budgets: [{nodes: "1", schedule: "TZ=UTC 0 9 * * *", duration: 1h}]}}}`},
		{name: "budget schedule unknown macro", kind: "NodePool", patch: `{spec: {disruption: {budgets: [{nodes: "1", schedule: "@every 1h", duration: 1h}]}}}`, want: "should match"},
		{name: "budget reason", kind: "NodePool", patch: `{spec: {disruption: {budgets: [{nodes: "1", reasons: [Expired]}]}}}`, want: "Unsupported value"},
		{name: "too many budgets", kind: "NodePool", patch: `{spec: {disruption: {budgets: [` + strings51(`{nodes: "1"}`) + `]}}}`, want: "must have at most 50 items"},
		{name: "consolidation policy", kind: "NodePool", patch: `{spec: {disruption: {consolidationPolicy: WhenUnderutilized}}}`, want: "Unsupported value"},
		{name: "consolidateAfter Never", kind: "NodePool", patch: `{spec: {disruption: {consolidateAfter: Never}}}`},
		{name: "consolidateAfter malformed", kind: "NodePool", patch: `{spec: {disruption: {consolidateAfter: 10}}}`, want: "must be of type string"},
		{name: "weight zero", kind: "NodePool", patch: `{spec: {weight: 0}}`, want: "should be greater than or equal to 1"},
		{name: "weight too big", kind: "NodePool", patch: `{spec: {weight: 101}}`, want: "should be less than or equal to 100"},
		{name: "too many requirements", kind: "NodePool", patch: `{spec: {template: {spec: {requirements: [` + strings51(`{key: a, operator: Exists}`) + `,` + strings51(`{key: b, operator: Exists}`) + `]}}}}`, want: "must have at most 100 items"},
	})
}

func TestNodeClaimAdmission(t *testing.T) {
	runAdmissionCases(t, []admissionCase{
		{name: "minimal", kind: "NodeClaim"},
		{name: "full", kind: "NodeClaim", patch: `
spec:
  taints: [{key: dedicated, value: web, effect: NoSchedule}]
  startupTaints: [{key: example.com/agent-not-ready, effect: NoExecute}]
  resources: {requests: {cpu: 3500m, memory: 7Gi, pods: "12"}}
  terminationGracePeriod: 1h
  expireAfter: 720h
status:
  nodeName: ip-10-0-1-2.ec2.internal
  providerID: aws:///us-east-1a/i-0123456789abcdef0
  imageID: ami-0123456789abcdef0
  capacity: {cpu: "4", memory: 16Gi}
  allocatable: {cpu: 3920m, memory: 15Gi}
  lastPodEventTime: "2026-01-02T03:04:05Z"
  conditions:
  - {type: Launched, status: "True", reason: Launched, message: "", lastTransitionTime: "2026-01-02T03:04:05Z"}
`},
		{name: "spec change", kind: "NodeClaim", old: `{}`, patch: `{spec: {expireAfter: 1h}}`, want: "a NodeClaim's spec cannot change after creation"},
		{name: "status change", kind: "NodeClaim", old: `{}`, patch: `{status: {nodeName: node-a}}`},
		{name: "requirement on hostname", kind: "NodeClaim", patch: `{spec: {requirements: [{key: kubernetes.io/hostname, operator: In, values: [a]}]}}`, want: "kubernetes.io/hostname cannot be required"},
		{name: "In without values", kind: "NodeClaim", patch: `{spec: {requirements: [{key: karpenter.sh/nodepool, operator: In}]}}`, want: "operator In needs at least one value"},
		{name: "nodeClassRef missing", kind: "NodeClaim", patch: `{spec: {nodeClassRef: null}}`, want: "Required value"},
		{name: "expireAfter defaulted", kind: "NodeClaim", patch: `{spec: {expireAfter: null}}`},
	})
}

func TestEC2NodeClassAdmission(t *testing.T) {
	runAdmissionCases(t, []admissionCase{
		{name: "minimal", kind: "EC2NodeClass"},
		{name: "full", kind: "EC2NodeClass", patch: `
spec:
  amiFamily: Custom
  amiSelectorTerms: [{alias: bottlerocket@v1.26.0}]
  subnetSelectorTerms: [{id: subnet-0123456789abcdef0}, {tags: {Name: "private-*", tier: "*"}}]
  securityGroupSelectorTerms: [{id: sg-0123456789abcdef0}, {name: nodes}, {tags: {karpenter.sh/discovery: c}}]
  capacityReservationSelectorTerms: [{id: cr-0123456789abcdef0}, {tags: {team: ml}, ownerID: "123456789012"}, {instanceMatchCriteria: open}]
  userData: "echo hello"
  tags: {team: web, Name: nodes}
  kubelet:
    clusterDNS: [10.100.0.10]
    maxPods: 110
    podsPerCore: 10
    systemReserved: {cpu: 100m, memory: 100Mi, ephemeral-storage: 1Gi, pid: "100"}
    kubeReserved: {cpu: 200m, memory: 100Mi}
    evictionHard: {memory.available: 5%, nodefs.available: 10%, nodefs.inodesFree: "10.5%", imagefs.available: 100Mi}
    evictionSoft: {memory.available: 500Mi, pid.available: 100%}
    evictionSoftGracePeriod: {memory.available: 1m30s, pid.available: 2m}
    evictionMaxPodGracePeriod: 60
    imageGCHighThresholdPercent: 85
    imageGCLowThresholdPercent: 80
    cpuCFSQuota: true
  blockDeviceMappings:
  - {deviceName: /dev/xvda, rootVolume: true, ebs: {volumeSize: 100Gi, volumeType: gp3, iops: 3000, throughput: 125, encrypted: true, deleteOnTermination: true, kmsKeyID: alias/ebs}}
  - {deviceName: /dev/xvdb, ebs: {snapshotID: snap-0123456789abcdef0, volumeInitializationRate: 200}}
  - {deviceName: /dev/xvdc, ebs: {volumeSize: 2T}}
  instanceStorePolicy: RAID0
  detailedMonitoring: true
  associatePublicIPAddress: false
  metadataOptions: {httpEndpoint: enabled, httpProtocolIPv6: enabled, httpPutResponseHopLimit: 2, httpTokens: optional}
  context: ctx-1
status:
  subnets: [{id: subnet-1, zone: us-east-1a, zoneID: use1-az1}]
  securityGroups: [{id: sg-1, name: nodes}]
  amis: [{id: ami-1, name: img, requirements: [{key: kubernetes.io/arch, operator: In, values: [arm64]}]}]
  instanceProfile: profile
  capacityReservations: [{id: cr-1, availabilityZone: us-east-1a, instanceType: p5.48xlarge, ownerID: "123456789012", instanceMatchCriteria: targeted, reservationType: capacity-block, state: expiring, interruptible: true, endTime: "2026-01-02T03:04:05Z"}]
  conditions: [{type: Ready, status: "True", reason: Ready, message: "", lastTransitionTime: "2026-01-02T03:04:05Z"}]
`},
		{name: "instanceProfile instead of role", kind: "EC2NodeClass", patch: `{spec: {role: null, instanceProfile: my-profile}}`},
		{name: "role and instanceProfile", kind: "EC2NodeClass", patch: `{spec: {instanceProfile: my-profile}}`, want: "set exactly one of role and instanceProfile"},
		{name: "neither role nor instanceProfile", kind: "EC2NodeClass", patch: `{spec: {role: null}}`, want: "set exactly one of role and instanceProfile"},
		{name: "role empty", kind: "EC2NodeClass", patch: `{spec: {role: ""}}`, want: "role must not be empty"},
		{name: "instanceProfile empty", kind: "EC2NodeClass", patch: `{spec: {role: null, instanceProfile: ""}}`, want: "instanceProfile must not be empty"},

		{name: "amiFamily missing without alias", kind: "EC2NodeClass", patch: `{spec: {amiSelectorTerms: [{id: ami-0123456789abcdef0}]}}`, want: "amiFamily is required unless an amiSelectorTerms alias is used"},
		{name: "amiFamily with id", kind: "EC2NodeClass", patch: `{spec: {amiFamily: AL2023, amiSelectorTerms: [{id: ami-0123456789abcdef0}]}}`},
		{name: "amiFamily matching alias", kind: "EC2NodeClass", patch: `{spec: {amiFamily: AL2023}}`},
		{name: "amiFamily Custom with alias", kind: "EC2NodeClass", patch: `{spec: {amiFamily: Custom}}`},
		{name: "amiFamily not matching alias", kind: "EC2NodeClass", patch: `{spec: {amiFamily: AL2}}`, want: "amiFamily must match the alias's family or be Custom"},
		{name: "amiFamily Windows2025 alias", kind: "EC2NodeClass", patch: `{spec: {amiFamily: Windows2025, amiSelectorTerms: [{alias: windows2025@latest}]}}`},
		{name: "amiFamily unknown", kind: "EC2NodeClass", patch: `{spec: {amiFamily: Ubuntu}}`, want: "Unsupported value"},
		{name: "alias without version", kind: "EC2NodeClass", patch: `{spec: {amiSelectorTerms: [{alias: al2023}]}}`, want: "alias must have the form family@version"},
		{name: "alias family unknown", kind: "EC2NodeClass", patch: `{spec: {amiSelectorTerms: [{alias: ubuntu@latest}]}}`, want: "alias family must be al2, al2023, bottlerocket"},
		{name: "alias family upper case", kind: "EC2NodeClass", patch: `{spec: {amiSelectorTerms: [{alias: AL2023@latest}]}}`, want: "alias family must be al2, al2023, bottlerocket"},
		{name: "alias pinned", kind: "EC2NodeClass", patch: `{spec: {amiSelectorTerms: [{alias: al2023@v20240625}]}}`},
		{name: "windows alias pinned", kind: "EC2NodeClass", patch: `{spec: {amiSelectorTerms: [{alias: windows2022@v1}]}}`, want: "Windows aliases cannot pin a version"},
		{name: "alias too long", kind: "EC2NodeClass", patch: `{spec: {amiSelectorTerms: [{alias: bottlerocket@v1.26.0-0123456789abc}]}}`, want: "may not be more than 30"},
		{name: "alias with another term", kind: "EC2NodeClass", patch: `{spec: {amiFamily: AL2023, amiSelectorTerms: [{alias: al2023@latest}, {id: ami-0123456789abcdef0}]}}`, want: "a term with an alias must be the only AMI selector term"},
		{name: "alias with owner", kind: "EC2NodeClass", patch: `{spec: {amiSelectorTerms: [{alias: al2023@latest, owner: self}]}}`, want: "alias selects images on its own"},
		{name: "id with name", kind: "EC2NodeClass", patch: `{spec: {amiFamily: AL2023, amiSelectorTerms: [{id: ami-0123456789abcdef0, name: my-image}]}}`, want: "id selects one image on its own"},
		{name: "id with ssmParameter", kind: "EC2NodeClass", patch: `{spec: {amiFamily: AL2023, amiSelectorTerms: [{id: ami-0123456789abcdef0, ssmParameter: /my/ami}]}}`},
		{name: "empty AMI term", kind: "EC2NodeClass", patch: `{spec: {amiFamily: AL2023, amiSelectorTerms: [{owner: self}]}}`, want: "every AMI selector term needs alias, id, name, tags or ssmParameter"},
		{name: "no AMI terms", kind: "EC2NodeClass", patch: `{spec: {amiFamily: AL2023, amiSelectorTerms: []}}`, want: "should have at least 1 items"},
		{name: "AMI id malformed", kind: "EC2NodeClass", patch: `{spec: {amiFamily: AL2023, amiSelectorTerms: [{id: i-0123}]}}`, want: "should match"},
		{name: "AMI tags empty value", kind: "EC2NodeClass", patch: `{spec: {amiFamily: AL2023, amiSelectorTerms: [{tags: {team: ""}}]}}`, want: "selector tags need a key and a value"},

		{name: "subnet term empty", kind: "EC2NodeClass", patch: `{spec: {subnetSelectorTerms: [{}]}}`, want: "every subnet selector term needs tags or id"},
		{name: "subnet id and tags", kind: "EC2NodeClass", patch: `{spec: {subnetSelectorTerms: [{id: subnet-1, tags: {a: b}}]}}`, want: "id selects one subnet on its own"},
		{name: "subnet id malformed", kind: "EC2NodeClass", patch: `{spec: {subnetSelectorTerms: [{id: sg-1}]}}`, want: "should match"},
		// An empty tags map counts as tags for Karpenter's rules.
		{name: "subnet tags empty map", kind: "EC2NodeClass", patch: `{spec: {subnetSelectorTerms: [{tags: {}}]}}`},
		{name: "subnet tag empty key", kind: "EC2NodeClass", patch: `{spec: {subnetSelectorTerms: [{tags: {"": b}}]}}`, want: "selector tags need a key and a value"},
		{name: "no subnet terms", kind: "EC2NodeClass", patch: `{spec: {subnetSelectorTerms: []}}`, want: "should have at least 1 items"},
		{name: "subnet terms missing", kind: "EC2NodeClass", patch: `{spec: {subnetSelectorTerms: null}}`, want: "Required value"},
		{name: "security group term empty", kind: "EC2NodeClass", patch: `{spec: {securityGroupSelectorTerms: [{}]}}`, want: "every security group selector term needs tags, id or name"},
		{name: "security group id and name", kind: "EC2NodeClass", patch: `{spec: {securityGroupSelectorTerms: [{id: sg-1, name: x}]}}`, want: "id selects one security group on its own"},
		{name: "security group name and tags", kind: "EC2NodeClass", patch: `{spec: {securityGroupSelectorTerms: [{name: x, tags: {a: b}}]}}`, want: "name selects security groups on its own"},
		{name: "security group id malformed", kind: "EC2NodeClass", patch: `{spec: {securityGroupSelectorTerms: [{id: subnet-1}]}}`, want: "should match"},
		{name: "capacity reservation term empty", kind: "EC2NodeClass", patch: `{spec: {capacityReservationSelectorTerms: [{ownerID: "123456789012"}]}}`, want: "every capacity reservation selector term needs tags, id or instanceMatchCriteria"},
		{name: "capacity reservation id and owner", kind: "EC2NodeClass", patch: `{spec: {capacityReservationSelectorTerms: [{id: cr-1, ownerID: "123456789012"}]}}`, want: "id selects one capacity reservation on its own"},
		{name: "capacity reservation owner malformed", kind: "EC2NodeClass", patch: `{spec: {capacityReservationSelectorTerms: [{tags: {a: b}, ownerID: "1234"}]}}`, want: "should match"},
		{name: "capacity reservation criteria", kind: "EC2NodeClass", patch: `{spec: {capacityReservationSelectorTerms: [{instanceMatchCriteria: any}]}}`, want: "Unsupported value"},

		{name: "tag empty key", kind: "EC2NodeClass", patch: `{spec: {tags: {"": x}}}`, want: "tag keys must not be empty"},
		{name: "tag cluster name", kind: "EC2NodeClass", patch: `{spec: {tags: {eks:eks-cluster-name: x}}}`, want: "tag eks:eks-cluster-name is set by stevedore"},
		{name: "tag cluster ownership", kind: "EC2NodeClass", patch: `{spec: {tags: {kubernetes.io/cluster/prod: owned}}}`, want: "tags starting with kubernetes.io/cluster are reserved"},
		{name: "tag nodepool", kind: "EC2NodeClass", patch: `{spec: {tags: {karpenter.sh/nodepool: x}}}`, want: "tag karpenter.sh/nodepool is set by stevedore"},
		{name: "tag nodeclaim", kind: "EC2NodeClass", patch: `{spec: {tags: {karpenter.sh/nodeclaim: x}}}`, want: "tag karpenter.sh/nodeclaim is set by stevedore"},
		{name: "tag nodeclass", kind: "EC2NodeClass", patch: `{spec: {tags: {karpenter.k8s.aws/ec2nodeclass: x}}}`, want: "tag karpenter.k8s.aws/ec2nodeclass is set by stevedore"},
		// Karpenter leaves tag lengths to EC2.
		{name: "tag value too long", kind: "EC2NodeClass", patch: `{spec: {tags: {a: "` + strings.Repeat("v", 257) + `"}}}`},

		{name: "kubelet reserved key", kind: "EC2NodeClass", patch: `{spec: {kubelet: {systemReserved: {gpu: "1"}}}}`, want: "systemReserved keys must be cpu, memory, ephemeral-storage or pid"},
		{name: "kubelet reserved negative", kind: "EC2NodeClass", patch: `{spec: {kubelet: {kubeReserved: {cpu: "-100m"}}}}`, want: "kubeReserved values must not be negative"},
		{name: "kubelet reserved malformed", kind: "EC2NodeClass", patch: `{spec: {kubelet: {systemReserved: {memory: lots}}}}`, want: "should match"},
		{name: "kubelet eviction key", kind: "EC2NodeClass", patch: `{spec: {kubelet: {evictionHard: {memory.free: 5%}}}}`, want: "evictionHard keys must be memory.available"},
		{name: "kubelet eviction malformed", kind: "EC2NodeClass", patch: `{spec: {kubelet: {evictionHard: {memory.available: lots}}}}`, want: "should match"},
		{name: "kubelet eviction empty", kind: "EC2NodeClass", patch: `{spec: {kubelet: {evictionHard: {memory.available: ""}}}}`},
		{name: "kubelet eviction percentage", kind: "EC2NodeClass", patch: `{spec: {kubelet: {evictionHard: {memory.available: 150%}}}}`, want: "should match"},
		{name: "kubelet eviction soft without grace", kind: "EC2NodeClass", patch: `{spec: {kubelet: {evictionSoft: {memory.available: 5%}}}}`, want: "every evictionSoft signal needs a grace period"},
		{name: "kubelet eviction grace without soft", kind: "EC2NodeClass", patch: `{spec: {kubelet: {evictionSoftGracePeriod: {memory.available: 1m}}}}`, want: "every evictionSoftGracePeriod signal needs a threshold"},
		{name: "kubelet eviction grace key", kind: "EC2NodeClass", patch: `{spec: {kubelet: {evictionSoft: {memory.available: 5%}, evictionSoftGracePeriod: {memory.available: 1m, memory.free: 1m}}}}`, want: "evictionSoftGracePeriod keys must be memory.available"},
		{name: "kubelet image gc", kind: "EC2NodeClass", patch: `{spec: {kubelet: {imageGCHighThresholdPercent: 50, imageGCLowThresholdPercent: 50}}}`, want: "imageGCHighThresholdPercent must be greater than imageGCLowThresholdPercent"},
		{name: "kubelet image gc range", kind: "EC2NodeClass", patch: `{spec: {kubelet: {imageGCHighThresholdPercent: 101}}}`, want: "should be less than or equal to 100"},
		{name: "kubelet maxPods negative", kind: "EC2NodeClass", patch: `{spec: {kubelet: {maxPods: -1}}}`, want: "should be greater than or equal to 0"},

		{name: "two root volumes", kind: "EC2NodeClass", patch: `{spec: {blockDeviceMappings: [{rootVolume: true, ebs: {volumeSize: 20Gi}}, {rootVolume: true, ebs: {volumeSize: 20Gi}}]}}`, want: "at most one block device mapping may be the root volume"},
		{name: "ebs without size", kind: "EC2NodeClass", patch: `{spec: {blockDeviceMappings: [{ebs: {volumeType: gp3}}]}}`, want: "an EBS volume needs a size or a snapshot"},
		{name: "ebs rate without snapshot", kind: "EC2NodeClass", patch: `{spec: {blockDeviceMappings: [{ebs: {volumeSize: 20Gi, volumeInitializationRate: 100}}]}}`, want: "volumeInitializationRate applies only to volumes created from a snapshot"},
		{name: "ebs rate range", kind: "EC2NodeClass", patch: `{spec: {blockDeviceMappings: [{ebs: {snapshotID: snap-1, volumeInitializationRate: 50}}]}}`, want: "should be greater than or equal to 100"},
		{name: "ebs size without unit", kind: "EC2NodeClass", patch: `{spec: {blockDeviceMappings: [{ebs: {volumeSize: "100"}}]}}`, want: "should match"},
		{name: "ebs size in Mi", kind: "EC2NodeClass", patch: `{spec: {blockDeviceMappings: [{ebs: {volumeSize: 100Mi}}]}}`, want: "should match"},
		{name: "ebs type", kind: "EC2NodeClass", patch: `{spec: {blockDeviceMappings: [{ebs: {volumeSize: 20Gi, volumeType: gp4}}]}}`, want: "Unsupported value"},
		{name: "instance store policy", kind: "EC2NodeClass", patch: `{spec: {instanceStorePolicy: RAID1}}`, want: "Unsupported value"},
		{name: "metadata hop limit", kind: "EC2NodeClass", patch: `{spec: {metadataOptions: {httpPutResponseHopLimit: 65}}}`, want: "should be less than or equal to 64"},
		{name: "metadata tokens", kind: "EC2NodeClass", patch: `{spec: {metadataOptions: {httpTokens: never}}}`, want: "Unsupported value"},
	})
}

// strings51 returns 51 copies of item, separated by commas.
func strings51(item string) string {
	return strings.TrimSuffix(strings.Repeat(item+",", 51), ",")
}
