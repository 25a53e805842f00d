package userdata

import (
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	awsv1 "github.com/stevedore-autoscaler/stevedore/api/aws/v1"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

func base() Options {
	return Options{
		ClusterName:     "prod",
		ClusterEndpoint: "https://ABCDEF.gr7.us-east-1.eks.amazonaws.com",
		CABundle:        "Y2EtYnVuZGxl",
		ClusterCIDR:     "10.100.0.0/16",
		ClusterDNS:      []string{"10.100.0.10"},
		MaxPods:         29,
		Labels: map[string]string{
			"karpenter.sh/nodepool":            "default",
			"node.kubernetes.io/instance-type": "m6i.large",
			"team":                             "payments",
			"kubernetes.io/forbidden":          "dropped",
			"node-role.kubernetes.io/worker":   "dropped",
			"example.k8s.io/also":              "dropped",
			"node.kubernetes.io/lifecycle":     "kept",
		},
		Taints: []corev1.Taint{
			{Key: "dedicated", Value: "payments", Effect: corev1.TaintEffectNoSchedule},
			{Key: "example.com/startup", Effect: corev1.TaintEffectNoSchedule},
		},
	}
}

func withKubelet(o Options) Options {
	o.Kubelet = &awsv1.KubeletConfiguration{
		MaxPods:                     ptr[int32](50),
		KubeReserved:                map[string]string{"cpu": "200m", "memory": "1Gi"},
		SystemReserved:              map[string]string{"memory": "500Mi"},
		EvictionHard:                map[string]string{"memory.available": "5%", "nodefs.available": "10%"},
		EvictionSoft:                map[string]string{"memory.available": "10%"},
		EvictionSoftGracePeriod:     map[string]metav1.Duration{"memory.available": {Duration: 90_000_000_000}},
		ImageGCHighThresholdPercent: ptr[int32](85),
		ImageGCLowThresholdPercent:  ptr[int32](80),
		CPUCFSQuota:                 ptr(true),
	}
	o.MaxPods = 0
	return o
}

func withUserData(o Options, s string) Options { o.UserData = &s; return o }

func withRAID0(o Options) Options {
	o.InstanceStorePolicy = ptr(awsv1.InstanceStorePolicyRAID0)
	return o
}

const userMIME = "MIME-Version: 1.0\nContent-Type: multipart/mixed; boundary=\"BOUNDARY\"\n\n--BOUNDARY\nContent-Type: text/x-shellscript; charset=\"us-ascii\"\n\n#!/bin/bash\necho first\n\n--BOUNDARY\nContent-Type: application/node.eks.aws\n\napiVersion: node.eks.aws/v1alpha1\nkind: NodeConfig\nspec:\n  kubelet:\n    config:\n      shutdownGracePeriod: 30s\n\n--BOUNDARY--\n"

const userTOML = `[settings.kubernetes]
cluster-name = "someone-else"
max-pods = 7
allowed-unsafe-sysctls = ["net.core.somaxconn"]

[settings.kubernetes.node-labels]
team = "user-value"
user-label = "kept"

[settings.host-containers.admin]
enabled = true
`

func TestGolden(t *testing.T) {
	tests := []struct {
		name   string
		family awsv1.AMIFamily
		opts   Options
	}{
		{"al2023", awsv1.AMIFamilyAL2023, base()},
		{"al2023-kubelet-raid0", awsv1.AMIFamilyAL2023, withRAID0(withKubelet(base()))},
		{"al2023-user-shell", awsv1.AMIFamilyAL2023, withUserData(base(), "#!/bin/bash\necho hello\n")},
		{"al2023-user-nodeconfig", awsv1.AMIFamilyAL2023, withUserData(base(), "apiVersion: node.eks.aws/v1alpha1\nkind: NodeConfig\nspec:\n  kubelet:\n    flags: [--v=4]\n")},
		{"al2023-user-mime", awsv1.AMIFamilyAL2023, withUserData(base(), userMIME)},
		{"al2", awsv1.AMIFamilyAL2, base()},
		{"al2-kubelet-raid0-user", awsv1.AMIFamilyAL2, withUserData(withRAID0(withKubelet(base())), "#!/bin/bash\necho hello\n")},
		{"bottlerocket", awsv1.AMIFamilyBottlerocket, base()},
		{"bottlerocket-user-kubelet", awsv1.AMIFamilyBottlerocket, withUserData(withKubelet(base()), userTOML)},
		{"windows2022", awsv1.AMIFamilyWindows2022, withUserData(base(), "<powershell>\nWrite-Host hello\n</powershell>")},
		{"custom", awsv1.AMIFamilyCustom, withUserData(base(), "#cloud-config\nruncmd: [echo custom]\n")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Generate(tt.family, tt.opts)
			if err != nil {
				t.Fatal(err)
			}
			again, _ := Generate(tt.family, tt.opts)
			if again != got {
				t.Fatal("output differs between two runs")
			}
			path := filepath.Join("testdata", tt.name+".golden")
			if *update {
				if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("%v (run go test -update to create it)", err)
			}
			if got != string(want) {
				t.Errorf("user data differs from %s (run go test -update to accept):\n%s", path, got)
			}
		})
	}
}

func TestInvariants(t *testing.T) {
	for _, family := range []awsv1.AMIFamily{awsv1.AMIFamilyAL2023, awsv1.AMIFamilyAL2, awsv1.AMIFamilyBottlerocket, awsv1.AMIFamilyWindows2019} {
		got, err := Generate(family, base())
		if err != nil {
			t.Fatalf("%s: %v", family, err)
		}
		for _, want := range []string{"karpenter.sh/unregistered", "NoExecute", "karpenter.sh/do-not-sync-taints", "team"} {
			if !strings.Contains(got, want) {
				t.Errorf("%s user data lacks %q", family, want)
			}
		}
		for _, banned := range []string{"kubernetes.io/forbidden", "node-role.kubernetes.io", "example.k8s.io"} {
			if strings.Contains(got, banned) {
				t.Errorf("%s user data has forbidden label %q", family, banned)
			}
		}
	}
}

func TestErrors(t *testing.T) {
	noCIDR := base()
	noCIDR.ClusterCIDR = ""
	noName := base()
	noName.ClusterName = ""
	tests := []struct {
		name   string
		family awsv1.AMIFamily
		opts   Options
	}{
		{"AL2023 without CIDR", awsv1.AMIFamilyAL2023, noCIDR},
		{"AL2 without cluster name", awsv1.AMIFamilyAL2, noName},
		{"bad TOML", awsv1.AMIFamilyBottlerocket, withUserData(base(), "[settings\n")},
		{"settings not a table", awsv1.AMIFamilyBottlerocket, withUserData(base(), "settings = 1\n")},
		{"bad MIME", awsv1.AMIFamilyAL2023, withUserData(base(), "MIME-Version: 1.0\nContent-Type: text/plain\n\nhi")},
		{"unknown family", awsv1.AMIFamily("Ubuntu"), base()},
	}
	for _, tt := range tests {
		if _, err := Generate(tt.family, tt.opts); err == nil {
			t.Errorf("%s: Generate succeeded, want an error", tt.name)
		}
	}
}
