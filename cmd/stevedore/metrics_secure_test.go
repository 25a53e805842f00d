package main

import (
	"crypto/tls"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// TestControllerSecureMetrics: with --metrics-secure the metrics are served
// over HTTPS, and only to a caller whose token the API server accepts and
// who may get /metrics: no token is refused with 401, a ServiceAccount
// without the permission with 403, and one bound to a ClusterRole allowing
// it (what a Prometheus needs) gets the metrics. Plain HTTP gets nothing.
func TestControllerSecureMetrics(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a real API server")
	}
	srv, kubeconfig := startAPIServer(t)
	ctx := t.Context()
	cs, err := kubernetes.NewForConfig(srv.Config)
	if err != nil {
		t.Fatal(err)
	}
	token := func(sa string) string {
		t.Helper()
		if _, err := cs.CoreV1().ServiceAccounts("default").Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: sa}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		tr, err := cs.CoreV1().ServiceAccounts("default").CreateToken(ctx, sa, &authenticationv1.TokenRequest{}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return tr.Status.Token
	}
	reader, stranger := token("prometheus"), token("stranger")
	if _, err := cs.RbacV1().ClusterRoles().Create(ctx, &rbacv1.ClusterRole{
		ObjectMeta: metav1.ObjectMeta{Name: "metrics-reader"},
		Rules:      []rbacv1.PolicyRule{{NonResourceURLs: []string{"/metrics"}, Verbs: []string{"get"}}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := cs.RbacV1().ClusterRoleBindings().Create(ctx, &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "prometheus-metrics-reader"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "metrics-reader"},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: "default", Name: "prometheus"}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	metricsAddr := freePort(t)
	f, world := testAccount(t, 7, "cmd-test")
	logs, done, _ := runTestController(t, f, kubeconfig, "--cluster-name=cmd-test", "--interruption-queue="+world.QueueName,
		"--health-probe-bind-address=0", "--metrics-bind-address="+metricsAddr, "--leader-elect=false", "--metrics-secure")
	// The certificate is self-signed: the test checks who is let in, not
	// the chain.
	httpsClient := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}} //nolint:gosec // self-signed test certificate
	scrape := func(bearer string) (int, string) {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, "https://"+metricsAddr+"/metrics", nil)
		if err != nil {
			t.Fatal(err)
		}
		if bearer != "" {
			req.Header.Set("Authorization", "Bearer "+bearer)
		}
		resp, err := httpsClient.Do(req)
		if err != nil {
			return 0, err.Error()
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(body)
	}
	deadline := time.Now().Add(60 * time.Second)
	for {
		select {
		case err := <-done:
			t.Fatalf("controller stopped early: %v\nlogs:\n%s", err, logs)
		default:
		}
		code, _ := scrape(reader)
		if code == http.StatusOK {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the metrics never answered the authorized reader (last status %d)\nlogs:\n%s", code, logs)
		}
		time.Sleep(200 * time.Millisecond)
	}
	for _, tc := range []struct {
		who, token string
		want       int
	}{
		{"no token", "", http.StatusUnauthorized},
		{"a ServiceAccount not allowed /metrics", stranger, http.StatusForbidden},
		{"a ServiceAccount allowed /metrics", reader, http.StatusOK},
	} {
		code, body := scrape(tc.token)
		if code != tc.want {
			t.Errorf("%s: status %d, want %d", tc.who, code, tc.want)
		}
		if tc.want == http.StatusOK && !strings.Contains(body, "controller_runtime_reconcile_total") {
			t.Errorf("%s: no controller_runtime_reconcile_total in the answer", tc.who)
		}
	}
	// The API server cannot review a made-up token; controller-runtime's
	// filter answers that with 500 rather than 401. Either way it is out.
	if code, _ := scrape("not-a-token"); code == http.StatusOK {
		t.Errorf("a token the API server does not know got the metrics")
	}
	if s := status(metricsAddr, "/metrics"); s == http.StatusOK {
		t.Errorf("plain HTTP got the metrics: %s", fmt.Sprint(s))
	}
}
