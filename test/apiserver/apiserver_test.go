package apiserver

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
)

// TestStartServesAndAcceptsToken starts the real control plane and checks that
// it reports the pinned release and that the printed kubeconfig's token works.
func TestStartServesAndAcceptsToken(t *testing.T) {
	srv, err := Start(Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := srv.Stop(); err != nil {
			t.Errorf("stopping: %v", err)
		}
	})

	raw, err := srv.Kubeconfig()
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := clientcmd.RESTConfigFromKubeConfig(raw)
	if err != nil {
		t.Fatalf("kubeconfig does not load: %v", err)
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	v, err := cs.Discovery().ServerVersion()
	if err != nil {
		t.Fatalf("server version with the token: %v", err)
	}
	if v.GitVersion != "v1.37.2" {
		t.Errorf("server reports %q, want the pinned v1.37.2", v.GitVersion)
	}
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "token-check"}}
	if _, err := cs.CoreV1().Namespaces().Create(context.Background(), ns, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating a namespace with the admin token: %v", err)
	}

	bad := *cfg
	bad.BearerToken = "not-the-token"
	badCS, err := kubernetes.NewForConfig(&bad)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := badCS.CoreV1().Namespaces().List(context.Background(), metav1.ListOptions{}); err == nil {
		t.Error("a wrong token was accepted")
	}
}

func TestSplitFlag(t *testing.T) {
	tests := []struct {
		in, k, v string
		err      bool
	}{
		{"--v=4", "v", "4", false},
		{"--feature-gates=A=true,B=false", "feature-gates", "A=true,B=false", false},
		{"--allow-privileged", "allow-privileged", "", false},
		{"v=4", "", "", true},
	}
	for _, tc := range tests {
		k, v, err := splitFlag(tc.in)
		if (err != nil) != tc.err || k != tc.k || v != tc.v {
			t.Errorf("splitFlag(%q) = %q, %q, %v", tc.in, k, v, err)
		}
	}
}
