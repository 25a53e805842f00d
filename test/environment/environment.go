// Package environment is the test harness of the controller packages: one
// real API server per test binary, and for each test a world of its own
// around it.
//
// A controller package's TestMain is Main, which starts etcd and
// kube-apiserver with stevedore's CRDs (package test/apiserver) and runs the
// package's tests against them. Each test then calls New for an Env: a name
// no other test uses (for its namespace and its cluster-scoped objects), a
// fake clock, an in-memory AWS with a standard cluster and the AWS provider
// over it, an empty cluster state, a metrics registry, and a recorder and a
// logger that keep what the controllers report. The Env also creates the
// usual objects (NodePool, EC2NodeClass, NodeClaim, Pod,
// PodDisruptionBudget), plays the parts of the system that do not run in a
// test (the informers that feed the cluster state, the kubelets, the node
// lifecycle controller's not-ready taint), and removes what the test left in
// the shared server when it ends.
//
// It exists so that each controller's tests hold only what is particular to
// that controller, and so that every controller is tested in the same world:
// before it, each package built its own copy of all this, and the copies
// had drifted apart in small ways (clock origins, event formats, what was
// cleaned up).
//
// Tests of one package run one at a time (none calls t.Parallel): an Env's
// cleanup removes every Node and NodeClaim in the server, since controllers
// and kubelets create them under names the test does not know.
package environment

import (
	"context"
	"fmt"
	"os"
	"reflect"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-logr/logr/funcr"
	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	awsv1 "github.com/stevedore-autoscaler/stevedore/api/aws/v1"
	karpv1 "github.com/stevedore-autoscaler/stevedore/api/karpenter/v1"
	"github.com/stevedore-autoscaler/stevedore/cloud/aws"
	"github.com/stevedore-autoscaler/stevedore/cloud/aws/fake"
	"github.com/stevedore-autoscaler/stevedore/cloud/aws/settings"
	"github.com/stevedore-autoscaler/stevedore/controllers/metrics"
	"github.com/stevedore-autoscaler/stevedore/state"
	"github.com/stevedore-autoscaler/stevedore/test/apiserver"
)

const (
	// ClusterName is the name of the EKS cluster the in-memory AWS holds.
	ClusterName = "test"
	// KubernetesVersion is the cluster's Kubernetes version.
	KubernetesVersion = "1.33"
	// InstanceProfile is the instance profile of the cluster's node role.
	InstanceProfile = "test-profile"
)

// Start is where a fake clock starts unless Options.WallClock is set.
var Start = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

// The package's server, set by Main.
var (
	server struct {
		config *rest.Config
		client client.Client
	}
	// runs numbers the Envs, to give each its own name.
	runs atomic.Int64
)

// Main is the whole of a controller package's TestMain: it starts the API
// server, runs the tests and exits with their status. A server that cannot
// start fails the package with the reason rather than skipping its tests.
func Main(m *testing.M) {
	os.Exit(apiserver.RunTests(m, func(cfg *rest.Config, c client.Client) {
		server.config, server.client = cfg, c
	}))
}

// Config returns an administrator's configuration for the package's server,
// for clients and managers of the test's own.
func Config() *rest.Config { return server.config }

// Options configure New.
type Options struct {
	// Name starts the Env's name; a number follows, so that every run of
	// every test has its own (namespaces are never finished deleting here,
	// as no namespace controller runs). Empty: "test".
	Name string
	// WallClock starts the fake clock at the real time, truncated to the
	// second, rather than at Start. The API server stamps creation and
	// deletion times with its own clock; tests that compare those with
	// the fake clock's need the two close.
	WallClock bool
	// InstanceTypes are the instance types the in-memory AWS offers. With
	// none there is no AWS: AWS, World and Cloud are nil.
	InstanceTypes []string
	// Seed seeds the in-memory AWS.
	Seed uint64
	// NodeClassInMemory has the provider read EC2NodeClasses from the Env
	// (see NodeClass) rather than from the API server: one resolved class,
	// named "default", that the test changes with UpdateNodeClass.
	NodeClassInMemory bool
}

// Env is one test's world. Its fields are set by New and the test may
// replace them (a restarted controller gets a new State, say).
type Env struct {
	T   *testing.T
	Ctx context.Context
	// Kube is a client of the shared API server.
	Kube client.Client
	// Name is the Env's own name: its namespace's, and that of the
	// NodePool and EC2NodeClass it creates.
	Name  string
	Clock *clocktesting.FakeClock
	// Events keeps the events recorded; pass it to controllers as their
	// event recorder.
	Events *Recorder
	// Logs keeps what is logged through Ctx.
	Logs     *Logs
	Registry *prometheus.Registry
	Metrics  *metrics.Metrics
	State    *state.Cluster
	// AWS, World and Cloud are the in-memory AWS, the standard cluster in
	// it (ClusterName) and the AWS provider over it; nil without
	// Options.InstanceTypes.
	AWS   *fake.AWS
	World *fake.ClusterWorld
	Cloud *aws.Provider

	// created are the objects Create made, for the cleanup.
	created []client.Object
	// nodeClass is the in-memory EC2NodeClass (Options.NodeClassInMemory).
	nodeClassMu    sync.Mutex
	nodeClass      *awsv1.EC2NodeClass
	afterClassRead func()
}

// New returns a new world for the test, with its namespace created, and
// removes what the test leaves in the API server when it ends.
func New(t *testing.T, opts Options) *Env {
	t.Helper()
	if server.client == nil {
		t.Fatal("environment.New before environment.Main started the API server")
	}
	prefix := opts.Name
	if prefix == "" {
		prefix = "test"
	}
	start := Start
	if opts.WallClock {
		start = time.Now().UTC().Truncate(time.Second)
	}
	e := &Env{
		T:        t,
		Kube:     server.client,
		Name:     fmt.Sprintf("%s-%d", prefix, runs.Add(1)),
		Clock:    clocktesting.NewFakeClock(start),
		Events:   &Recorder{},
		Logs:     &Logs{},
		Registry: prometheus.NewRegistry(),
		State:    state.NewCluster(),
	}
	e.Ctx = log.IntoContext(context.Background(), funcr.New(e.Logs.add, funcr.Options{}))
	var err error
	if e.Metrics, err = metrics.New(e.Registry); err != nil {
		t.Fatal(err)
	}
	if len(opts.InstanceTypes) > 0 {
		e.newAWS(opts)
	}
	t.Cleanup(e.cleanup)
	e.Create(&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: e.Name}})
	return e
}

// newAWS builds the in-memory AWS, its cluster and the provider.
func (e *Env) newAWS(opts Options) {
	e.T.Helper()
	e.AWS = fake.New(fake.Options{Seed: opts.Seed, Clock: e.Clock, InstanceTypes: opts.InstanceTypes})
	var err error
	if e.World, err = e.AWS.StandardCluster(ClusterName, KubernetesVersion); err != nil {
		e.T.Fatal(err)
	}
	if err := e.AWS.AddInstanceProfile(InstanceProfile, e.World.NodeRole); err != nil {
		e.T.Fatal(err)
	}
	getter := e.nodeClassFromServer
	if opts.NodeClassInMemory {
		e.nodeClass = e.NewEC2NodeClass("default")
		e.nodeClass.Generation = 1
		getter = e.nodeClassFromMemory
	}
	s := settings.Default()
	s.ClusterName = ClusterName
	e.Cloud, err = aws.New(aws.Options{
		Clients:   e.AWS.Clients(),
		Region:    e.AWS.Region(),
		Settings:  s,
		Clock:     e.Clock,
		NodeClass: getter,
		Cluster:   aws.ClusterInfo{Endpoint: "https://example.eks.amazonaws.com", CABundle: "Q0E=", ServiceCIDR: "10.100.0.0/16", DNS: []string{"10.100.0.10"}},
	})
	if err != nil {
		e.T.Fatal(err)
	}
}

func (e *Env) nodeClassFromServer(ctx context.Context, name string) (*awsv1.EC2NodeClass, error) {
	nc := &awsv1.EC2NodeClass{}
	if err := e.Kube.Get(ctx, client.ObjectKey{Name: name}, nc); err != nil {
		return nil, client.IgnoreNotFound(err)
	}
	return nc, nil
}

func (e *Env) nodeClassFromMemory(_ context.Context, name string) (*awsv1.EC2NodeClass, error) {
	e.nodeClassMu.Lock()
	var nc *awsv1.EC2NodeClass
	if e.nodeClass.Name == name {
		nc = e.nodeClass.DeepCopy()
	}
	after := e.afterClassRead
	e.nodeClassMu.Unlock()
	if after != nil {
		after()
	}
	return nc, nil
}

// NodeClass returns a copy of the in-memory EC2NodeClass
// (Options.NodeClassInMemory).
func (e *Env) NodeClass() *awsv1.EC2NodeClass {
	e.nodeClassMu.Lock()
	defer e.nodeClassMu.Unlock()
	return e.nodeClass.DeepCopy()
}

// UpdateNodeClass changes the in-memory EC2NodeClass; the provider reads it
// from controller goroutines, so the change is made under its lock.
func (e *Env) UpdateNodeClass(change func(*awsv1.EC2NodeClass)) {
	e.nodeClassMu.Lock()
	defer e.nodeClassMu.Unlock()
	change(e.nodeClass)
}

// AfterNodeClassRead sets a function the provider calls each time it has
// read the in-memory EC2NodeClass, before it goes on with what it read.
func (e *Env) AfterNodeClassRead(f func()) {
	e.nodeClassMu.Lock()
	defer e.nodeClassMu.Unlock()
	e.afterClassRead = f
}

// Create creates the objects as they are given, status included: a
// namespaced object without a namespace goes in the Env's, and a status,
// which the API server ignores on creation, is written after it through the
// status subresource. The objects are updated with what the server
// returned, and removed when the test ends.
func (e *Env) Create(objs ...client.Object) {
	e.T.Helper()
	for _, o := range objs {
		namespaced, err := e.Kube.IsObjectNamespaced(o)
		if err != nil {
			e.T.Fatal(err)
		}
		if namespaced && o.GetNamespace() == "" {
			o.SetNamespace(e.Name)
		}
		// The server's answer replaces the status given; a copy keeps it.
		var status reflect.Value
		if s := reflect.ValueOf(o).Elem().FieldByName("Status"); s.IsValid() && !s.IsZero() {
			status = reflect.ValueOf(o.DeepCopyObject()).Elem().FieldByName("Status")
		}
		if err := e.Kube.Create(e.Ctx, o); err != nil {
			e.T.Fatalf("creating %s %s: %v", kindOf(o), o.GetName(), err)
		}
		e.created = append(e.created, o)
		if status.IsValid() {
			reflect.ValueOf(o).Elem().FieldByName("Status").Set(status)
			if err := e.Kube.Status().Update(e.Ctx, o); err != nil {
				e.T.Fatalf("writing the status of %s %s: %v", kindOf(o), o.GetName(), err)
			}
		}
	}
}

// Refresh reads the object again from the API server.
func (e *Env) Refresh(o client.Object) {
	e.T.Helper()
	if err := e.Kube.Get(e.Ctx, client.ObjectKeyFromObject(o), o); err != nil {
		e.T.Fatalf("reading %s %s: %v", kindOf(o), o.GetName(), err)
	}
}

// Exists reports whether an object of o's kind with o's namespace and name
// is in the API server (being deleted or not), reading it into o if so.
func (e *Env) Exists(o client.Object) bool {
	e.T.Helper()
	err := e.Kube.Get(e.Ctx, client.ObjectKeyFromObject(o), o)
	if err != nil && !apierrors.IsNotFound(err) {
		e.T.Fatalf("reading %s %s: %v", kindOf(o), o.GetName(), err)
	}
	return err == nil
}

// NodeClaim reads the NodeClaim.
func (e *Env) NodeClaim(name string) *karpv1.NodeClaim {
	e.T.Helper()
	return read(e, &karpv1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: name}})
}

// Node reads the Node.
func (e *Env) Node(name string) *corev1.Node {
	e.T.Helper()
	return read(e, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}})
}

// read reads o, named, from the API server and returns it.
func read[T client.Object](e *Env, o T) T {
	e.T.Helper()
	e.Refresh(o)
	return o
}

// cleanup removes what the test left in the API server: the pods and
// PodDisruptionBudgets in its namespace, every Node and NodeClaim, and what
// it created. Finalizers are stripped first, as no controller runs any more
// to remove them.
func (e *Env) cleanup() {
	ctx := context.Background()
	_ = e.Kube.DeleteAllOf(ctx, &corev1.Pod{}, client.InNamespace(e.Name), client.GracePeriodSeconds(0))
	_ = e.Kube.DeleteAllOf(ctx, &policyv1.PodDisruptionBudget{}, client.InNamespace(e.Name))
	var leftovers []client.Object
	var nodes corev1.NodeList
	if err := e.Kube.List(ctx, &nodes); err == nil {
		for i := range nodes.Items {
			leftovers = append(leftovers, &nodes.Items[i])
		}
	}
	var claims karpv1.NodeClaimList
	if err := e.Kube.List(ctx, &claims); err == nil {
		for i := range claims.Items {
			leftovers = append(leftovers, &claims.Items[i])
		}
	}
	for i := len(e.created) - 1; i >= 0; i-- {
		leftovers = append(leftovers, e.created[i])
	}
	for _, o := range leftovers {
		_ = e.Kube.Patch(ctx, o, client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"finalizers":null}}`)))
		var opts []client.DeleteOption
		if _, ok := o.(*corev1.Pod); ok {
			opts = append(opts, client.GracePeriodSeconds(0))
		}
		_ = e.Kube.Delete(ctx, o, opts...)
	}
}

// kindOf names the object's type: "NodeClaim", "Pod".
func kindOf(o any) string {
	t := reflect.TypeOf(o)
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	return t.Name()
}
