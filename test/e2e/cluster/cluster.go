// Package cluster runs a whole local Kubernetes cluster on loopback for the
// end-to-end tests and for hack/local-cluster.sh: etcd, kube-apiserver,
// kube-scheduler, kube-controller-manager and kwok, which plays the kubelet of
// every Node annotated kwok.x-k8s.io/node=fake. The binaries are the ones
// hack/kube-binaries.sh builds from the pinned releases; nothing is downloaded
// and no container engine is needed.
//
// etcd and kube-apiserver are started through controller-runtime's envtest,
// which generates the serving certificate and the client certificates the
// components log in with. The other three are plain child processes. Every
// component's flags come from a file in hack/local-cluster/, and kwok's node
// and pod stages from hack/local-cluster/kwok/, so the script and the tests
// run the same cluster.
//
// A cluster keeps its files in one directory:
//
//	kubeconfig   cluster-admin, for kubectl or the stevedore controller
//	pids         "name pid executable" for each running component
//	logs/        one log file per component
//	run/         keys, certificates and the components' kubeconfigs
package cluster

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/stevedore-autoscaler/stevedore/api/crds"
	"github.com/stevedore-autoscaler/stevedore/test/apiserver"
)

const (
	// KWOKNodeAnnotation, set to KWOKNodeValue on a Node, makes kwok play that
	// Node's kubelet: it becomes Ready, its Lease is renewed, and pods bound to
	// it run.
	KWOKNodeAnnotation = "kwok.x-k8s.io/node"
	// KWOKNodeValue is the value of KWOKNodeAnnotation that kwok manages.
	KWOKNodeValue = "fake"
)

// The component names, which are also the names of their binaries, flag files
// (NAME.flags) and log files (logs/NAME.log).
const (
	Etcd                  = "etcd"
	KubeAPIServer         = "kube-apiserver"
	KubeScheduler         = "kube-scheduler"
	KubeControllerManager = "kube-controller-manager"
	KWOK                  = "kwok"
)

// binaries are the executables a cluster needs in the binary directory.
var binaries = []string{Etcd, KubeAPIServer, KubeScheduler, KubeControllerManager, KWOK}

// Options configure Start.
type Options struct {
	// Dir is the cluster's directory (see the package documentation). It is
	// created if missing; run/ is emptied first and the components' logs in
	// logs/ are removed.
	Dir string
	// BinDir holds the binaries. Default: bin/ at the repository root, or
	// $STEVEDORE_KUBE_BIN (as for package test/apiserver).
	BinDir string
	// ConfigDir holds the flag files and kwok's configuration. Default:
	// hack/local-cluster at the repository root.
	ConfigDir string
	// CRDs are installed, and waited for, before Start returns. Nil means
	// stevedore's CRDs; an empty, non-nil slice installs none.
	CRDs []*apiextensionsv1.CustomResourceDefinition
	// Progress, when set, receives a line as each component becomes ready.
	Progress io.Writer
	// Flags are more flags by component name ("--name=value" or "--name"),
	// for a cluster that must differ from the flag files, such as one run
	// at a larger scale than the suite's. A flag named here replaces every
	// occurrence of it in the component's flag file. ${NAME} is expanded
	// as in the flag files.
	Flags map[string][]string
}

// Component describes one running component.
type Component struct {
	Name string
	// PID is the process ID, or 0 when it could not be determined.
	PID int
	// Path is the executable.
	Path string
	// Log is the component's log file.
	Log string
}

// Cluster is a running local cluster.
type Cluster struct {
	// Config reaches the API server as a cluster administrator (a client
	// certificate in group system:masters).
	Config *rest.Config
	// Kubeconfig is the path of a kubeconfig file holding the same credentials.
	Kubeconfig string
	// Dir is the cluster's directory.
	Dir string

	env        *envtest.Environment
	envLogs    []*os.File
	procs      []*process
	extra      []*process // started by StartProcess
	guard      *process
	components []Component
	flags      map[string][]string // Options.Flags
	progress   io.Writer
	started    time.Time

	stopMu  sync.Mutex
	stopped bool
}

// Start brings up a cluster in opts.Dir and returns once every component is
// healthy, the CRDs are established and the default namespace's service
// account exists (pods can be created). On failure, everything already
// started is stopped again and the error carries the end of the failing
// component's log.
func Start(ctx context.Context, opts Options) (c *Cluster, err error) {
	if opts.Dir == "" {
		return nil, errors.New("cluster: Options.Dir is required")
	}
	dir, err := filepath.Abs(opts.Dir)
	if err != nil {
		return nil, err
	}
	bin, err := binDir(opts.BinDir)
	if err != nil {
		return nil, err
	}
	config := opts.ConfigDir
	if config == "" {
		if config, err = ConfigDir(); err != nil {
			return nil, err
		}
	}
	if config, err = filepath.Abs(config); err != nil {
		return nil, err
	}
	crdList := opts.CRDs
	if crdList == nil {
		if crdList, err = crds.All(); err != nil {
			return nil, fmt.Errorf("loading stevedore's CRDs: %w", err)
		}
	}

	c = &Cluster{Dir: dir, progress: opts.Progress, started: time.Now()}
	// run/ starts empty; in logs/, only the components' own logs are removed
	// (a caller may log there too).
	runDir, logDir := c.runDir(), c.LogDir()
	if err := os.RemoveAll(runDir); err != nil {
		return nil, err
	}
	for _, d := range []string{runDir, logDir} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return nil, err
		}
	}
	stale := []string{c.pidFile(), filepath.Join(dir, "kubeconfig")}
	for _, name := range binaries {
		stale = append(stale, filepath.Join(logDir, name+".log"))
	}
	for _, f := range stale {
		if err := os.Remove(f); err != nil && !errors.Is(err, os.ErrNotExist) {
			return nil, err
		}
	}
	defer func() {
		if err != nil {
			tails := c.failureLogs()
			_ = c.Stop()
			err = fmt.Errorf("%w%s", err, tails)
			c = nil
		}
	}()

	if err := writeServiceAccountKeys(runDir); err != nil {
		return c, err
	}
	vars := map[string]string{"RUN": runDir, "CONFIG": config}

	for name := range opts.Flags {
		if !slices.Contains(binaries, name) {
			return c, fmt.Errorf("cluster: Options.Flags names %q, which is not a component (%s)", name, strings.Join(binaries, ", "))
		}
	}
	c.flags = opts.Flags

	// etcd and kube-apiserver, through envtest.
	if err := c.startAPIServer(bin, config, vars, crdList); err != nil {
		return c, err
	}
	c.Config = c.env.Config
	c.logf("etcd and kube-apiserver ready at %s, CRDs installed", c.Config.Host)
	c.components = []Component{
		{Name: Etcd, PID: childPID(filepath.Join(bin, Etcd)), Path: filepath.Join(bin, Etcd), Log: filepath.Join(logDir, Etcd+".log")},
		{Name: KubeAPIServer, PID: childPID(filepath.Join(bin, KubeAPIServer)), Path: filepath.Join(bin, KubeAPIServer), Log: filepath.Join(logDir, KubeAPIServer+".log")},
	}
	if c.guard = guard([]int{c.components[0].PID, c.components[1].PID}); c.guard != nil {
		if err := c.guard.start(); err != nil {
			return c, err
		}
	}
	if err := os.WriteFile(filepath.Join(runDir, "ca.crt"), c.env.ControlPlane.APIServer.SecureServing.CA, 0o644); err != nil {
		return c, err
	}

	// Credentials: an administrator, and one identity per component.
	admin, err := c.addUser("local-cluster-admin", "system:masters")
	if err != nil {
		return c, err
	}
	c.Config = rest.CopyConfig(admin)
	c.Config.QPS, c.Config.Burst = 1000, 2000
	c.Kubeconfig = filepath.Join(dir, "kubeconfig")
	if err := writeKubeconfig(c.Kubeconfig, admin, "stevedore-local"); err != nil {
		return c, err
	}
	for _, u := range []struct{ file, user, group string }{
		{KubeScheduler, "system:kube-scheduler", ""},
		{KubeControllerManager, "system:kube-controller-manager", ""},
		// kwok writes the status of Nodes and pods, Leases, events, and
		// deletes pods, across the cluster.
		{KWOK, "kwok-controller", "system:masters"},
	} {
		cfg, err := c.addUser(u.user, u.group)
		if err != nil {
			return c, err
		}
		if err := writeKubeconfig(filepath.Join(runDir, u.file+".kubeconfig"), cfg, "stevedore-local"); err != nil {
			return c, err
		}
	}

	// kube-scheduler, kube-controller-manager and kwok, side by side.
	for _, name := range []string{KubeScheduler, KubeControllerManager, KWOK} {
		port, err := freePort()
		if err != nil {
			return c, err
		}
		procVars := map[string]string{"PORT": port}
		for k, v := range vars {
			procVars[k] = v
		}
		args, err := ReadFlags(filepath.Join(config, name+".flags"), procVars)
		if err != nil {
			return c, err
		}
		extra, err := c.extraFlags(name, procVars)
		if err != nil {
			return c, err
		}
		args = overrideFlags(args, extra)
		p := &process{
			name:    name,
			path:    filepath.Join(bin, name),
			args:    args,
			logPath: filepath.Join(logDir, name+".log"),
			health:  "https://127.0.0.1:" + port + "/healthz",
		}
		if name == KWOK {
			p.health = "http://127.0.0.1:" + port + "/healthz"
			// kwok also reads $KWOK_WORKDIR/kwok.yaml (default ~/.kwok) if it
			// exists; keep a developer's own kwok setup out of this cluster.
			p.env = []string{"KWOK_WORKDIR=" + filepath.Join(runDir, "kwok")}
		}
		if err := p.start(); err != nil {
			return c, err
		}
		c.procs = append(c.procs, p)
	}
	waitCtx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	for _, p := range c.procs {
		if err := p.waitHealthy(waitCtx); err != nil {
			return c, err
		}
		c.logf("%s ready", p.name)
	}

	// Pods cannot be created in a namespace before its default service
	// account exists; the controller manager makes it shortly after start.
	if err := c.waitForServiceAccount(waitCtx, corev1.NamespaceDefault); err != nil {
		return c, err
	}

	for _, p := range c.procs {
		c.components = append(c.components, Component{Name: p.name, PID: p.pid(), Path: p.path, Log: p.logPath})
	}
	if err := c.writePIDs(); err != nil {
		return c, err
	}
	c.logf("cluster ready in %s", time.Since(c.started).Round(100*time.Millisecond))
	return c, nil
}

func (c *Cluster) startAPIServer(bin, config string, vars map[string]string, crdList []*apiextensionsv1.CustomResourceDefinition) error {
	etcdLog, err := os.Create(filepath.Join(c.LogDir(), Etcd+".log"))
	if err != nil {
		return err
	}
	apiLog, err := os.Create(filepath.Join(c.LogDir(), KubeAPIServer+".log"))
	if err != nil {
		_ = etcdLog.Close()
		return err
	}
	c.envLogs = []*os.File{etcdLog, apiLog}

	etcd := &envtest.Etcd{Out: etcdLog, Err: etcdLog}
	api := &envtest.APIServer{Out: apiLog, Err: apiLog}
	for _, s := range []struct {
		name string
		args *envtest.Arguments
	}{{Etcd, etcd.Configure()}, {KubeAPIServer, api.Configure()}} {
		flags, err := ReadFlags(filepath.Join(config, s.name+".flags"), vars)
		if err != nil {
			return err
		}
		extra, err := c.extraFlags(s.name, vars)
		if err != nil {
			return err
		}
		applyFlags(s.args, overrideFlags(flags, extra))
	}
	c.env = &envtest.Environment{
		BinaryAssetsDirectory:    bin,
		CRDs:                     crdList,
		ErrorIfCRDPathMissing:    true,
		ControlPlaneStartTimeout: 2 * time.Minute,
		ControlPlaneStopTimeout:  time.Minute,
	}
	c.env.ControlPlane.Etcd = etcd
	c.env.ControlPlane.APIServer = api
	if _, err := c.env.Start(); err != nil {
		return fmt.Errorf("starting etcd and kube-apiserver: %w", err)
	}
	return nil
}

// applyFlags sets envtest arguments from "--name=value" lines: the first
// occurrence of a name replaces envtest's default, later ones add values (for
// repeatable flags), and a bare "--name" is passed as a switch.
func applyFlags(args *envtest.Arguments, flags []string) {
	seen := map[string]bool{}
	for _, f := range flags {
		name, value, has := splitFlag(f)
		switch {
		case !has:
			args.Enable(name)
		case seen[name]:
			args.Append(name, value)
		default:
			args.Set(name, value)
		}
		seen[name] = true
	}
}

// extraFlags returns the component's Options.Flags, read as its flag file
// is: each a --flag, ${NAME} expanded from vars.
func (c *Cluster) extraFlags(name string, vars map[string]string) ([]string, error) {
	if len(c.flags[name]) == 0 {
		return nil, nil
	}
	return parseFlags("Options.Flags["+name+"]", []byte(strings.Join(c.flags[name], "\n")), vars)
}

// overrideFlags returns flags without the names that extra sets, followed by
// extra. Dropping the file's occurrences, rather than relying on the last
// one winning, also replaces repeatable flags and envtest's defaults (see
// applyFlags, where the first occurrence of a name replaces the default).
func overrideFlags(flags, extra []string) []string {
	if len(extra) == 0 {
		return flags
	}
	set := map[string]bool{}
	for _, f := range extra {
		name, _, _ := splitFlag(f)
		set[name] = true
	}
	out := make([]string, 0, len(flags)+len(extra))
	for _, f := range flags {
		if name, _, _ := splitFlag(f); !set[name] {
			out = append(out, f)
		}
	}
	return append(out, extra...)
}

func (c *Cluster) addUser(name, group string) (*rest.Config, error) {
	u := envtest.User{Name: name}
	if group != "" {
		u.Groups = []string{group}
	}
	au, err := c.env.AddUser(u, nil)
	if err != nil {
		return nil, fmt.Errorf("provisioning user %s: %w", name, err)
	}
	return au.Config(), nil
}

// AddUser gives the cluster a user that logs in with a client certificate,
// in group if it is not empty, and writes a kubeconfig for it in the
// cluster's run directory; it returns that file's path. The audit log
// records the writes of the users "karpenter" and "stevedore".
func (c *Cluster) AddUser(name, group string) (string, error) {
	cfg, err := c.addUser(name, group)
	if err != nil {
		return "", err
	}
	path := filepath.Join(c.runDir(), "user-"+name+".kubeconfig")
	if err := writeKubeconfig(path, cfg, "stevedore-local"); err != nil {
		return "", err
	}
	return path, nil
}

// AuditLog is the path of the API server's audit log, JSON lines as
// hack/local-cluster/audit-policy.yaml selects them.
func (c *Cluster) AuditLog() string { return filepath.Join(c.runDir(), "audit.log") }

func (c *Cluster) waitForServiceAccount(ctx context.Context, namespace string) error {
	cs, err := kubernetes.NewForConfig(c.Config)
	if err != nil {
		return err
	}
	for {
		_, err := cs.CoreV1().ServiceAccounts(namespace).Get(ctx, "default", metav1.GetOptions{})
		if err == nil {
			return nil
		}
		for _, p := range c.procs {
			if done, perr := p.exited(); done {
				return fmt.Errorf("%s exited: %v", p.name, perr)
			}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("the controller manager did not create the default service account of namespace %s: %v", namespace, err)
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// Healthy reports an error if a component has exited or the API server is not
// ready. The end-to-end suite calls it after its tests, so that a component
// crashing mid-run fails the run even if no test noticed.
func (c *Cluster) Healthy(ctx context.Context) error {
	var errs []error
	for _, p := range c.procs {
		if done, err := p.exited(); done {
			errs = append(errs, fmt.Errorf("%s exited: %v", p.name, err))
		}
	}
	cs, err := kubernetes.NewForConfig(c.Config)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if body, err := cs.Discovery().RESTClient().Get().AbsPath("/readyz").DoRaw(ctx); err != nil {
		errs = append(errs, fmt.Errorf("kube-apiserver not ready: %v %s", err, body))
	}
	return errors.Join(errs...)
}

// Components lists the running components in start order.
func (c *Cluster) Components() []Component { return append([]Component(nil), c.components...) }

// LogDir is the directory of the components' log files.
func (c *Cluster) LogDir() string { return filepath.Join(c.Dir, "logs") }

func (c *Cluster) runDir() string  { return filepath.Join(c.Dir, "run") }
func (c *Cluster) pidFile() string { return filepath.Join(c.Dir, "pids") }

// WriteLogTails writes the last lines of every component's log, and of the
// processes StartProcess started, to w.
func (c *Cluster) WriteLogTails(w io.Writer, lines int) {
	var paths []string
	for _, name := range binaries {
		path := filepath.Join(c.LogDir(), name+".log")
		if _, err := os.Stat(path); err != nil {
			continue // not started
		}
		paths = append(paths, path)
	}
	for _, path := range append(paths, c.extraLogs()...) {
		fmt.Fprintf(w, "==> %s (last %d lines) <==\n%s\n", path, lines, tail(path, lines))
	}
}

// failureLogs is what a failed Start adds to its error: the end of the log of
// each component that exited, or of all of them when none did (a readiness
// timeout).
func (c *Cluster) failureLogs() string {
	var b strings.Builder
	for _, p := range c.procs {
		if done, err := p.exited(); done {
			fmt.Fprintf(&b, "\n%s exited (%v); the end of %s:\n%s", p.name, err, p.logPath, tail(p.logPath, 30))
		}
	}
	if b.Len() == 0 {
		b.WriteString("\n")
		c.WriteLogTails(&b, 15)
	}
	return b.String()
}

// Stop stops every component (SIGTERM, then SIGKILL after a grace period),
// removes run/, the kubeconfig and the pid file, and keeps the logs. The error
// names any component that had exited before Stop, with the end of its log,
// and any that had to be killed.
func (c *Cluster) Stop() error {
	if c == nil {
		return nil
	}
	c.stopMu.Lock()
	defer c.stopMu.Unlock()
	if c.stopped {
		return nil
	}
	c.stopped = true
	errs := c.stopExtra()
	for i := len(c.procs) - 1; i >= 0; i-- {
		p := c.procs[i]
		if done, err := p.exited(); done && !p.stopping.Load() {
			errs = append(errs, fmt.Errorf("%s had exited (%v); the end of %s:\n%s", p.name, err, p.logPath, tail(p.logPath, 30)))
		}
		if err := p.stop(15 * time.Second); err != nil {
			errs = append(errs, err)
		}
	}
	if c.guard != nil && c.guard.cmd != nil {
		// SIGKILL: the guard must not run its trap, envtest stops the two.
		c.guard.stopping.Store(true)
		_ = c.guard.cmd.Process.Kill()
		<-c.guard.done
	}
	if c.env != nil {
		if err := c.env.Stop(); err != nil {
			errs = append(errs, fmt.Errorf("stopping etcd and kube-apiserver: %w", err))
		}
	}
	for _, f := range c.envLogs {
		_ = f.Close()
	}
	for _, f := range []string{c.runDir(), c.pidFile(), filepath.Join(c.Dir, "kubeconfig")} {
		if err := os.RemoveAll(f); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

func (c *Cluster) writePIDs() error {
	var b strings.Builder
	for _, comp := range c.components {
		fmt.Fprintf(&b, "%s %d %s\n", comp.Name, comp.PID, comp.Path)
	}
	return os.WriteFile(c.pidFile(), []byte(b.String()), 0o644)
}

func (c *Cluster) logf(format string, args ...any) {
	if c.progress == nil {
		return
	}
	fmt.Fprintf(c.progress, "[%5.1fs] %s\n", time.Since(c.started).Seconds(), fmt.Sprintf(format, args...))
}

// ConfigDir returns hack/local-cluster at the root of the repository holding
// the working directory.
func ConfigDir() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		candidate := filepath.Join(dir, "hack", "local-cluster")
		if _, err := os.Stat(filepath.Join(candidate, "kwok.flags")); err == nil {
			return candidate, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("cannot find hack/local-cluster above the working directory; set Options.ConfigDir")
		}
		dir = parent
	}
}

// binDir returns the directory with all five binaries, or an error wrapping
// apiserver.ErrNoBinaries that says how to build them.
func binDir(dir string) (string, error) {
	if dir == "" {
		var err error
		if dir, err = apiserver.BinDir(); err != nil {
			return "", err
		}
	}
	for _, b := range binaries {
		if _, err := os.Stat(filepath.Join(dir, b)); err != nil {
			return "", fmt.Errorf("%w (looked for %s in %s)", apiserver.ErrNoBinaries, b, dir)
		}
	}
	return filepath.Abs(dir)
}

// writeServiceAccountKeys generates the key pair service-account tokens are
// signed with: the controller manager signs with the private key, the API
// server verifies with the public one and signs bound tokens with the private.
func writeServiceAccountKeys(runDir string) error {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return err
	}
	der, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return err
	}
	pub, err := x509.MarshalPKIXPublicKey(&key.PublicKey)
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(runDir, "service-account.key"), pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: der}), 0o600); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(runDir, "service-account.pub"), pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: pub}), 0o644)
}

// writeKubeconfig writes a kubeconfig with cfg's server, CA and client
// certificate.
func writeKubeconfig(path string, cfg *rest.Config, name string) error {
	kc := clientcmdapi.NewConfig()
	kc.Clusters[name] = &clientcmdapi.Cluster{Server: cfg.Host, CertificateAuthorityData: cfg.CAData}
	kc.AuthInfos[name] = &clientcmdapi.AuthInfo{ClientCertificateData: cfg.CertData, ClientKeyData: cfg.KeyData, Token: cfg.BearerToken}
	kc.Contexts[name] = &clientcmdapi.Context{Cluster: name, AuthInfo: name}
	kc.CurrentContext = name
	return clientcmd.WriteToFile(*kc, path)
}

// tail returns the last n lines of the file at path (reading at most its last
// 256 KiB), or a note saying why it cannot.
func tail(path string, n int) string {
	f, err := os.Open(path)
	if err != nil {
		return fmt.Sprintf("(%v)", err)
	}
	defer f.Close()
	const window = 256 << 10
	if st, err := f.Stat(); err == nil && st.Size() > window {
		_, _ = f.Seek(st.Size()-window, io.SeekStart)
	}
	data, err := io.ReadAll(f)
	if err != nil {
		return fmt.Sprintf("(%v)", err)
	}
	lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
