// Package apiserver starts a real etcd and kube-apiserver on loopback for tests
// and for local experiments. The binaries are the ones hack/kube-binaries.sh
// builds from the pinned Kubernetes release; nothing is downloaded and no
// container engine is needed.
//
// It wraps controller-runtime's envtest, which already knows how to generate
// serving certificates, pick free ports and wait for readiness, and adds what
// stevedore's tests want on top: the binaries' location, the served CRDs, and a
// bearer token so that command-line tools can be pointed at the server too.
package apiserver

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	autoscalingv1beta1 "github.com/stevedore-autoscaler/stevedore/api/autoscaling/v1beta1"
	awsv1 "github.com/stevedore-autoscaler/stevedore/api/aws/v1"
	"github.com/stevedore-autoscaler/stevedore/api/crds"
	karpv1 "github.com/stevedore-autoscaler/stevedore/api/karpenter/v1"
	"github.com/stevedore-autoscaler/stevedore/api/karpenter/v1alpha1"
)

// BinDirEnv names the environment variable that points at the directory holding
// etcd and kube-apiserver. Without it, bin/ at the repository root is used.
const BinDirEnv = "STEVEDORE_KUBE_BIN"

// ErrNoBinaries is returned when the control-plane binaries have not been built.
var ErrNoBinaries = errors.New("the Kubernetes control-plane binaries are not built: run `make kube-binaries` (hack/kube-binaries.sh) once; it caches them for later runs")

// BinDir returns the directory holding the control-plane binaries.
func BinDir() (string, error) {
	dir := os.Getenv(BinDirEnv)
	if dir == "" {
		root, err := repoRoot()
		if err != nil {
			return "", err
		}
		dir = filepath.Join(root, "bin")
	}
	for _, b := range []string{"etcd", "kube-apiserver"} {
		if _, err := os.Stat(filepath.Join(dir, b)); err != nil {
			return "", fmt.Errorf("%w (looked for %s in %s)", ErrNoBinaries, b, dir)
		}
	}
	return dir, nil
}

// repoRoot walks up from the working directory to the directory with go.mod and
// hack/kube-binaries.sh, so tests find bin/ from any package.
func repoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "hack", "kube-binaries.sh")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", fmt.Errorf("cannot find the stevedore repository root above the working directory; set %s", BinDirEnv)
		}
		dir = parent
	}
}

// Options configure Start.
type Options struct {
	// CRDs are installed, and waited for, before Start returns.
	CRDs []*apiextensionsv1.CustomResourceDefinition
	// ExtraArgs are added to kube-apiserver's command line ("--flag=value").
	ExtraArgs []string
	// Output, when set, receives the control plane's logs.
	Output bool
}

// Server is a running etcd and kube-apiserver pair.
type Server struct {
	// Config is an administrator's client configuration (client certificate).
	Config *rest.Config
	// Token is a bearer token with cluster-admin rights, accepted by the server.
	Token string

	env     *envtest.Environment
	workDir string
}

// Start launches etcd and kube-apiserver on loopback ports and waits until the
// API server is ready and the CRDs are established.
func Start(opts Options) (*Server, error) {
	bin, err := BinDir()
	if err != nil {
		return nil, err
	}
	work, err := os.MkdirTemp("", "stevedore-apiserver-")
	if err != nil {
		return nil, err
	}
	token, err := randomToken()
	if err != nil {
		return nil, err
	}
	tokenFile := filepath.Join(work, "tokens.csv")
	// token,user,uid,"group1,group2"
	if err := os.WriteFile(tokenFile, []byte(token+`,stevedore-admin,stevedore-admin,"system:masters"`+"\n"), 0o600); err != nil {
		return nil, err
	}

	env := &envtest.Environment{
		BinaryAssetsDirectory:    bin,
		CRDs:                     opts.CRDs,
		ErrorIfCRDPathMissing:    true,
		ControlPlaneStartTimeout: 2 * time.Minute,
		ControlPlaneStopTimeout:  time.Minute,
		AttachControlPlaneOutput: opts.Output,
	}
	args := env.ControlPlane.GetAPIServer().Configure()
	args.Append("token-auth-file", tokenFile)
	for _, a := range opts.ExtraArgs {
		k, v, err := splitFlag(a)
		if err != nil {
			return nil, err
		}
		args.Append(k, v)
	}
	cfg, err := env.Start()
	if err != nil {
		_ = os.RemoveAll(work)
		return nil, fmt.Errorf("starting etcd and kube-apiserver from %s: %w", bin, err)
	}
	return &Server{Config: cfg, Token: token, env: env, workDir: work}, nil
}

// Stop shuts the server down and removes its files.
func (s *Server) Stop() error {
	err := s.env.Stop()
	if rmErr := os.RemoveAll(s.workDir); err == nil {
		err = rmErr
	}
	return err
}

// Kubeconfig renders a kubeconfig that reaches the server with the bearer token.
func (s *Server) Kubeconfig() ([]byte, error) {
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["stevedore-test"] = &clientcmdapi.Cluster{
		Server:                   s.Config.Host,
		CertificateAuthorityData: s.Config.CAData,
	}
	cfg.AuthInfos["stevedore-admin"] = &clientcmdapi.AuthInfo{Token: s.Token}
	cfg.Contexts["stevedore-test"] = &clientcmdapi.Context{Cluster: "stevedore-test", AuthInfo: "stevedore-admin"}
	cfg.CurrentContext = "stevedore-test"
	return clientcmd.Write(*cfg)
}

func randomToken() (string, error) {
	b := make([]byte, 24)
	if _, err := rand.Read(b); err != nil {
		return "", err
	}
	return hex.EncodeToString(b), nil
}

func splitFlag(a string) (string, string, error) {
	if len(a) < 3 || a[:2] != "--" {
		return "", "", fmt.Errorf("extra kube-apiserver argument %q: want --flag=value", a)
	}
	for i := 2; i < len(a); i++ {
		if a[i] == '=' {
			return a[2:i], a[i+1:], nil
		}
	}
	return a[2:], "", nil
}

// Scheme returns a scheme with client-go's built-in types and stevedore's
// served types (NodePool, NodeClaim, NodeOverlay, EC2NodeClass, CapacityBuffer).
func Scheme() *runtime.Scheme {
	s := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{clientgoscheme.AddToScheme, karpv1.AddToScheme, v1alpha1.AddToScheme, awsv1.AddToScheme, autoscalingv1beta1.AddToScheme} {
		if err := add(s); err != nil {
			panic(fmt.Sprintf("building the test scheme: %v", err))
		}
	}
	return s
}

// RunTests is the TestMain of a package that tests against the API server:
// it starts etcd and kube-apiserver with stevedore's CRDs, hands use a client
// for them (with Scheme's types), runs the tests and stops the server. It
// returns the exit code; a server that cannot start fails the package with
// the reason rather than skipping its tests.
func RunTests(m *testing.M, use func(cfg *rest.Config, c client.Client)) int {
	all, err := crds.All()
	if err != nil {
		fmt.Fprintln(os.Stderr, "loading CRDs:", err)
		return 1
	}
	srv, err := Start(Options{CRDs: all})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer func() {
		if err := srv.Stop(); err != nil {
			fmt.Fprintln(os.Stderr, "stopping the API server:", err)
		}
	}()
	c, err := client.New(srv.Config, client.Options{Scheme: Scheme()})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	use(srv.Config, c)
	return m.Run()
}
