package runner

import (
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/aws/smithy-go"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utiljson "k8s.io/apimachinery/pkg/util/json"
	"k8s.io/apimachinery/pkg/util/strategicpatch"
	"sigs.k8s.io/controller-runtime/pkg/client"

	karpv1 "github.com/stevedore-autoscaler/stevedore/api/karpenter/v1"
	"github.com/stevedore-autoscaler/stevedore/api/validation"
	"github.com/stevedore-autoscaler/stevedore/api/wellknown"
	"github.com/stevedore-autoscaler/stevedore/cloud/aws/fake"
	"github.com/stevedore-autoscaler/stevedore/sim/apiserver"
	"github.com/stevedore-autoscaler/stevedore/sim/kubelet"
	"github.com/stevedore-autoscaler/stevedore/sim/scenario"
)

// Reasons of ScenarioEvent entries: the event's kind, or Failed when it
// could not be carried out.
const reasonFailed = "Failed"

// scenarioEvent carries out one event of the scenario and logs it.
func (r *Runner) scenarioEvent(e *scenario.TimedEvent) {
	now := r.clock.Now()
	object, msg, err := r.carryOut(e)
	reason := strings.ToUpper(e.Kind[:1]) + e.Kind[1:]
	if e.Kind == "awsFault" {
		reason = "AWSFault"
	}
	if err != nil {
		r.rec.ScenarioEvent(now, reasonFailed, object, fmt.Sprintf("%s %s: %v", e.Field(), e.Kind, err))
		r.rec.Warn("%s (%s at %s) could not be carried out: %v", e.Field(), e.Kind, e.At, err)
		return
	}
	r.rec.ScenarioEvent(now, reason, object, msg)
}

func (r *Runner) carryOut(e *scenario.TimedEvent) (object, msg string, err error) {
	ev := e.Event
	switch e.Kind {
	case "apply":
		return r.apply(e)
	case "delete":
		return r.deleteObject(e.GVK, ev.Delete.Namespace, ev.Delete.Name)
	case "scale":
		s := ev.Scale
		if e.GVK.GroupKind() == (schema.GroupKind{Group: wellknown.GroupCore, Kind: "NodePool"}) {
			if err := r.staticNodePool(s.Name); err != nil {
				return "NodePool/" + s.Name, "", err
			}
		}
		patch := fmt.Sprintf(`{"spec":{"replicas":%d}}`, *s.Replicas)
		object, _, err = r.patch(e.GVK, s.Namespace, s.Name, "merge", []byte(patch))
		return object, fmt.Sprintf("scaled to %d replicas", *s.Replicas), err
	case "patch":
		p := ev.Patch
		object, msg, err = r.patch(e.GVK, p.Namespace, p.Name, p.Type, p.Patch)
		return object, msg, err
	case "releaseImage":
		ri := ev.ReleaseImage
		version := ri.KubernetesVersion
		if version == "" {
			version = r.run.KubernetesVersion
		}
		img, err := r.aws.ReleaseImage(ri.Alias, version, ri.Arch, ri.Variant, fake.Image{ID: ri.ID, Name: ri.Name})
		if err != nil {
			return "", "", err
		}
		return "Image/" + img.ID, fmt.Sprintf("released %s for %s@latest (Kubernetes %s, %s, %s)", img.ID, ri.Alias, version, ri.Arch, ri.Variant), nil
	case "spotInterruption":
		return r.spotInterruption(ev.SpotInterruption)
	case "nodeFailure":
		return r.nodeFailure(ev.NodeFailure)
	case "instanceStatusFailure":
		return r.instanceStatusFailure(ev.InstanceStatusFailure)
	case "insufficientCapacity":
		ice := ev.InsufficientCapacity
		until := r.clock.Now().Add(e.For)
		r.aws.InjectInsufficientCapacity(ice.InstanceTypes, ice.Zones, ice.CapacityType, until)
		return "", fmt.Sprintf("no capacity for %s in %s (%s) until %s", all(ice.InstanceTypes, "any instance type"),
			all(ice.Zones, "any zone"), all([]string{ice.CapacityType}, "spot and on-demand"), until.UTC().Format(time.RFC3339)), nil
	case "awsFault":
		return "", r.awsFault(ev.AWSFault, e.For), nil
	case "zonalShift":
		zs := ev.ZonalShift
		id, err := r.aws.StartZonalShift(r.run.ClusterName, zs.Zone, e.For, "scenario "+e.Field())
		if err != nil {
			return "", "", err
		}
		zoneID, _ := r.aws.ZoneID(zs.Zone)
		return "", fmt.Sprintf("zonal shift %s: traffic shifted away from %s (%s) until %s", id, zs.Zone, zoneID,
			r.clock.Now().Add(e.For).UTC().Format(time.RFC3339)), nil
	case "restartController":
		if err := r.restart(); err != nil {
			return "", "", err
		}
		return "", "the controller's in-memory state was dropped and rebuilt from the API", nil
	}
	return "", "", fmt.Errorf("unknown event kind %q", e.Kind)
}

// staticNodePool refuses to scale a dynamic NodePool, as the API server
// does: setting spec.replicas through the scale subresource would turn it
// static, which the NodePool's validation rules forbid.
func (r *Runner) staticNodePool(name string) error {
	np := &karpv1.NodePool{}
	if err := r.api.Get(r.ctx, client.ObjectKey{Name: name}, np); err != nil {
		return err
	}
	if np.Spec.Replicas == nil {
		return fmt.Errorf("NodePool %s is dynamic (spec.replicas unset) and cannot be scaled: a NodePool cannot switch between static and dynamic; scale a static NodePool, or create one with spec.replicas", name)
	}
	return nil
}

func all(s []string, none string) string {
	s = slices.DeleteFunc(slices.Clone(s), func(x string) bool { return x == "" })
	if len(s) == 0 {
		return none
	}
	return strings.Join(s, ", ")
}

// newObject returns an empty object of a kind.
func (r *Runner) newObject(gvk schema.GroupVersionKind, namespace, name string) (client.Object, error) {
	o, err := r.opts.Scheme.New(gvk)
	if err != nil {
		return nil, err
	}
	co, ok := o.(client.Object)
	if !ok {
		return nil, fmt.Errorf("%s is not an API object", gvk.Kind)
	}
	if apiserver.Namespaced(gvk) {
		if namespace == "" {
			namespace = metav1.NamespaceDefault
		}
		co.SetNamespace(namespace)
	}
	co.SetName(name)
	return co, nil
}

func ref(gvk schema.GroupVersionKind, o client.Object) string {
	if o.GetNamespace() == "" {
		return gvk.Kind + "/" + o.GetName()
	}
	return gvk.Kind + "/" + o.GetNamespace() + "/" + o.GetName()
}

// apply creates the event's object, or, when it exists, merges the object
// into it (a JSON merge patch of the manifest), which keeps what controllers
// added — finalizers, annotations, status — as kubectl apply does.
func (r *Runner) apply(e *scenario.TimedEvent) (string, string, error) {
	obj := e.Object.DeepCopyObject().(client.Object)
	if apiserver.Namespaced(e.GVK) && obj.GetNamespace() == "" {
		obj.SetNamespace(metav1.NamespaceDefault)
	}
	name := ref(e.GVK, obj)
	if ns := obj.GetNamespace(); ns != "" {
		if err := r.ensureNamespace(ns); err != nil {
			return name, "", err
		}
	}
	cur, err := r.newObject(e.GVK, obj.GetNamespace(), obj.GetName())
	if err != nil {
		return name, "", err
	}
	err = r.api.Get(r.ctx, client.ObjectKeyFromObject(cur), cur)
	switch {
	case apierrors.IsNotFound(err):
		if err := r.api.Create(r.ctx, obj); err != nil {
			return name, "", err
		}
		return name, "created", nil
	case err != nil:
		return name, "", err
	}
	data, err := json.Marshal(obj)
	if err != nil {
		return name, "", err
	}
	m := map[string]any{}
	if err := json.Unmarshal(data, &m); err != nil {
		return name, "", err
	}
	delete(m, "status")
	if md, ok := m["metadata"].(map[string]any); ok {
		delete(md, "creationTimestamp")
	}
	if data, err = json.Marshal(m); err != nil {
		return name, "", err
	}
	if _, _, err := r.patch(e.GVK, obj.GetNamespace(), obj.GetName(), "merge", data); err != nil {
		return name, "", err
	}
	return name, "configured", nil
}

func (r *Runner) ensureNamespace(ns string) error {
	err := r.api.Create(r.ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})
	if apierrors.IsAlreadyExists(err) {
		return nil
	}
	return err
}

func (r *Runner) deleteObject(gvk schema.GroupVersionKind, namespace, name string) (string, string, error) {
	o, err := r.newObject(gvk, namespace, name)
	if err != nil {
		return "", "", err
	}
	if err := r.api.Delete(r.ctx, o); err != nil {
		return ref(gvk, o), "", err
	}
	return ref(gvk, o), "deleted", nil
}

// patch applies a patch the way the API server would, rejecting a result
// that fails validation (for NodePools and EC2NodeClasses, the CRDs' schema
// and rules) as it would.
func (r *Runner) patch(gvk schema.GroupVersionKind, namespace, name, typ string, data []byte) (string, string, error) {
	cur, err := r.newObject(gvk, namespace, name)
	if err != nil {
		return "", "", err
	}
	object := ref(gvk, cur)
	if err := r.api.Get(r.ctx, client.ObjectKeyFromObject(cur), cur); err != nil {
		return object, "", err
	}
	doc, err := json.Marshal(cur)
	if err != nil {
		return object, "", err
	}
	var patched []byte
	switch typ {
	case "", "merge":
		patched, err = apiserver.MergePatch(doc, data)
	case "json":
		patched, err = apiserver.JSONPatch(doc, data)
	case "strategic":
		patched, err = strategicpatch.StrategicMergePatch(doc, data, cur.DeepCopyObject())
	default:
		err = fmt.Errorf("unknown patch type %q", typ)
	}
	if err != nil {
		return object, "", err
	}
	if gvk.Group == wellknown.GroupCore || gvk.Group == wellknown.GroupAWS {
		if err := r.validate(gvk, patched); err != nil {
			return object, "", err
		}
	}
	next, err := r.newObject(gvk, namespace, name)
	if err != nil {
		return object, "", err
	}
	if err := json.Unmarshal(patched, next); err != nil {
		return object, "", err
	}
	next.SetResourceVersion(cur.GetResourceVersion())
	if err := r.api.Update(r.ctx, next); err != nil {
		return object, "", err
	}
	return object, "patched", nil
}

// validate runs the offline validator on a patched NodePool or
// EC2NodeClass, as the API server runs the CRD's schema and rules.
func (r *Runner) validate(gvk schema.GroupVersionKind, data []byte) error {
	// Decoded as the API server decodes custom resources: whole numbers
	// are int64, which the schema's integer fields (spec.replicas, read
	// by the scale subresource's check) need.
	m := map[string]any{}
	if err := utiljson.Unmarshal(data, &m); err != nil {
		return err
	}
	u := &unstructured.Unstructured{Object: m}
	u.SetGroupVersionKind(gvk)
	meta, _ := m["metadata"].(map[string]any)
	for _, k := range []string{"uid", "resourceVersion", "generation", "creationTimestamp", "managedFields", "finalizers", "deletionTimestamp", "deletionGracePeriodSeconds", "ownerReferences"} {
		delete(meta, k)
	}
	delete(m, "status")
	v, err := validation.Default()
	if err != nil {
		return err
	}
	var msgs []string
	for _, p := range v.Object(gvk.Kind+"/"+u.GetName(), u) {
		if p.Severity == validation.SeverityError {
			msgs = append(msgs, p.String())
		}
	}
	if len(msgs) > 0 {
		return fmt.Errorf("the API server would reject the patched object: %s", strings.Join(msgs, "; "))
	}
	return nil
}

// pick chooses the nodes an event acts on: the nodes named, or count of the
// nodes that match the selector (all when count is 0), drawn with the run's
// seed; eligible filters the candidates. They come sorted by name.
func (r *Runner) pick(sel *scenario.Selection, eligible func(*corev1.Node) bool) []*corev1.Node {
	var candidates []*corev1.Node
	for _, o := range r.api.Objects(nodeGVK) {
		n := o.(*corev1.Node)
		if n.DeletionTimestamp != nil || !eligible(n) {
			continue
		}
		if len(sel.Nodes) > 0 {
			if slices.Contains(sel.Nodes, n.Name) {
				candidates = append(candidates, n)
			}
			continue
		}
		match := true
		for k, v := range sel.NodeSelector {
			if n.Labels[k] != v {
				match = false
				break
			}
		}
		if match {
			candidates = append(candidates, n)
		}
	}
	if len(sel.Nodes) > 0 || sel.Count == 0 || sel.Count >= len(candidates) {
		return candidates
	}
	r.rng.Shuffle(len(candidates), func(i, j int) { candidates[i], candidates[j] = candidates[j], candidates[i] })
	chosen := candidates[:sel.Count]
	sort.Slice(chosen, func(i, j int) bool { return chosen[i].Name < chosen[j].Name })
	return chosen
}

func names(nodes []*corev1.Node) string {
	out := make([]string, len(nodes))
	for i, n := range nodes {
		out[i] = n.Name
	}
	return strings.Join(out, ", ")
}

// spotInterruption interrupts spot instances: with an interruption queue,
// EC2's two-minute warning goes to it; either way the instance terminates
// two minutes later.
func (r *Runner) spotInterruption(sel *scenario.Selection) (string, string, error) {
	now := r.clock.Now()
	queue := r.run.AWS.InterruptionQueue
	nodes := r.pick(sel, func(n *corev1.Node) bool {
		id := kubelet.InstanceID(n.Spec.ProviderID)
		if id == "" {
			return false
		}
		info, ok := r.aws.Instance(id)
		return ok && info.CapacityType == fake.CapacityTypeSpot && info.State == fake.StateRunning
	})
	if len(nodes) == 0 {
		return "", "", fmt.Errorf("no running spot node matches")
	}
	at := now.Add(fake.SpotInterruptionNotice)
	for _, n := range nodes {
		id := kubelet.InstanceID(n.Spec.ProviderID)
		var err error
		if queue != "" {
			err = r.aws.InterruptSpotInstance(queue, id)
		} else {
			err = r.aws.ScheduleTermination(id, at)
		}
		if err != nil {
			return "", "", err
		}
		r.rec.InstanceEnds(id, at)
		r.q.addFunc(func() { r.rec.InstanceTerminated(id, at, "SpotInterruption") }, at)
		// The kubelet dies with the instance.
		r.q.addReconcile(r.kubeletD, watchNamed(n.Name), at)
	}
	if queue != "" {
		r.pollQueue()
	}
	how := "terminating in 2m; warning sent to queue " + queue
	if queue == "" {
		how = "terminating in 2m; no interruption queue, so no warning is handled"
	}
	return "", fmt.Sprintf("interrupted %d spot node(s): %s (%s)", len(nodes), names(nodes), how), nil
}

// nodeFailure stops the kubelets of the nodes chosen; their instances keep
// running (and billing). With a condition, it turns that condition False on
// them instead.
func (r *Runner) nodeFailure(f *scenario.NodeFailure) (string, string, error) {
	if f.Condition != "" {
		return r.conditionFailure(&f.Selection, corev1.NodeConditionType(f.Condition))
	}
	nodes := r.pick(&f.Selection, func(n *corev1.Node) bool {
		_, stopped := r.kubelets.Stopped(n.Name)
		return !stopped
	})
	if len(nodes) == 0 {
		return "", "", fmt.Errorf("no node with a running kubelet matches")
	}
	for _, n := range nodes {
		r.kubelets.Fail(n.Name)
	}
	return "", fmt.Sprintf("the kubelet stopped on %d node(s): %s", len(nodes), names(nodes)), nil
}

// instanceStatusFailure fails a status check of the chosen nodes' running
// instances; the instance status poller finds them on its next polls.
func (r *Runner) instanceStatusFailure(f *scenario.InstanceStatusFailure) (string, string, error) {
	check := f.Check
	if check == "" {
		check = fake.StatusCheckInstance
	}
	nodes := r.pick(&f.Selection, func(n *corev1.Node) bool {
		id := kubelet.InstanceID(n.Spec.ProviderID)
		if id == "" {
			return false
		}
		info, ok := r.aws.Instance(id)
		return ok && info.State == fake.StateRunning
	})
	if len(nodes) == 0 {
		return "", "", fmt.Errorf("no node of a running instance matches")
	}
	for _, n := range nodes {
		if err := r.aws.ImpairInstanceStatus(kubelet.InstanceID(n.Spec.ProviderID), check); err != nil {
			return "", "", err
		}
	}
	return "", fmt.Sprintf("the %s status check failed on %d node(s): %s", check, len(nodes), names(nodes)), nil
}

// conditionFailure turns the condition typ False on the nodes chosen, as the
// EKS node monitoring agent does when it finds a subsystem broken; their
// kubelets keep running. Nodes on which it is False already are not chosen.
func (r *Runner) conditionFailure(sel *scenario.Selection, typ corev1.NodeConditionType) (string, string, error) {
	nodes := r.pick(sel, func(n *corev1.Node) bool {
		if _, stopped := r.kubelets.Stopped(n.Name); stopped {
			return false
		}
		for _, c := range n.Status.Conditions {
			if c.Type == typ && c.Status == corev1.ConditionFalse {
				return false
			}
		}
		return true
	})
	if len(nodes) == 0 {
		return "", "", fmt.Errorf("no node with a running kubelet and %s not False matches", typ)
	}
	now := metav1.NewTime(r.clock.Now())
	cond := corev1.NodeCondition{Type: typ, Status: corev1.ConditionFalse, Reason: "SimulatedFailure",
		Message: "the scenario failed this node's " + string(typ), LastHeartbeatTime: now, LastTransitionTime: now}
	for _, n := range nodes {
		cur := n.DeepCopy()
		found := false
		for i := range cur.Status.Conditions {
			if cur.Status.Conditions[i].Type == typ {
				cur.Status.Conditions[i], found = cond, true
			}
		}
		if !found {
			cur.Status.Conditions = append(cur.Status.Conditions, cond)
		}
		if err := r.api.Status().Update(r.ctx, cur); err != nil {
			return "", "", fmt.Errorf("setting %s False on node %s: %w", typ, n.Name, err)
		}
	}
	return "", fmt.Sprintf("%s turned False on %d node(s): %s", typ, len(nodes), names(nodes)), nil
}

// pollQueue wakes the interruption queue's poller, if one is driven, as the
// long poll it sits in would return at once.
func (r *Runner) pollQueue() {
	for _, d := range r.prod {
		if d.Name == interruptionPoller {
			r.q.addReconcile(d, watchNamed(interruptionPoller), r.clock.Now())
		}
	}
}

// awsFault makes the fault's operations fail: the next times calls of each,
// or every call until the window ends.
func (r *Runner) awsFault(f *scenario.AWSFault, window time.Duration) string {
	until := r.clock.Now().Add(window)
	var codes []string
	for _, op := range f.Operations {
		err := faultError(op, f.Error)
		if ae, ok := err.(smithy.APIError); ok && !slices.Contains(codes, ae.ErrorCode()) {
			codes = append(codes, ae.ErrorCode())
		}
		if window > 0 {
			r.aws.InjectErrorUntil(op, err, until)
		} else {
			r.aws.InjectError(op, err, f.Times)
		}
	}
	ops, code := strings.Join(f.Operations, ", "), strings.Join(codes, " or ")
	if window > 0 {
		return fmt.Sprintf("%s fail with %s until %s", ops, code, until.UTC().Format(time.RFC3339))
	}
	return fmt.Sprintf("the next %d calls of %s fail with %s", f.Times, ops, code)
}

// faultError is the error an operation fails with.
func faultError(op, kind string) error {
	switch kind {
	case scenario.FaultThrottling:
		return fake.ThrottlingError(op)
	case scenario.FaultServerError:
		return fake.APIError("InternalError", "We encountered an internal error. Please try again.")
	case scenario.FaultUnavailable:
		return fake.APIError("ServiceUnavailable", "The service is unavailable. Please try again shortly.")
	}
	return fake.APIError(kind, "The request failed with "+kind+" (a fault of the scenario).")
}
