package apiserver

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/selection"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/strategicpatch"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

var _ client.Client = (*Server)(nil)

// Scheme implements client.Client.
func (s *Server) Scheme() *runtime.Scheme { return s.scheme }

// RESTMapper implements client.Client.
func (s *Server) RESTMapper() meta.RESTMapper { return s.mapper }

// GroupVersionKindFor implements client.Client.
func (s *Server) GroupVersionKindFor(obj runtime.Object) (schema.GroupVersionKind, error) {
	return s.gvkFor(obj)
}

// IsObjectNamespaced implements client.Client.
func (s *Server) IsObjectNamespaced(obj runtime.Object) (bool, error) {
	gvk, err := s.gvkFor(obj)
	if err != nil {
		return false, err
	}
	return Namespaced(gvk), nil
}

func resource(gvk schema.GroupVersionKind) schema.GroupResource {
	plural, _ := meta.UnsafeGuessKindToResource(gvk)
	return plural.GroupResource()
}

// Get implements client.Client.
func (s *Server) Get(_ context.Context, key client.ObjectKey, obj client.Object, _ ...client.GetOption) error {
	gvk, err := s.gvkFor(obj)
	if err != nil {
		return err
	}
	if !Namespaced(gvk) {
		key.Namespace = ""
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	cur := s.store(gvk).objs[key]
	if cur == nil {
		return apierrors.NewNotFound(resource(gvk), key.Name)
	}
	return assign(obj, cur.DeepCopyObject())
}

// List implements client.Client. Items come in namespace/name order. Field
// selectors may use metadata.name, metadata.namespace and the indexed
// fields; Limit and Continue are ignored (everything comes in one page).
func (s *Server) List(_ context.Context, list client.ObjectList, opts ...client.ListOption) error {
	lgvk, err := s.gvkFor(list)
	if err != nil {
		return err
	}
	if len(lgvk.Kind) <= 4 || lgvk.Kind[len(lgvk.Kind)-4:] != "List" {
		return fmt.Errorf("apiserver: %s is not a list kind", lgvk)
	}
	gvk := lgvk.GroupVersion().WithKind(lgvk.Kind[:len(lgvk.Kind)-4])
	lo := client.ListOptions{}
	lo.ApplyOptions(opts)
	s.mu.Lock()
	items, err := s.selectLocked(gvk, lo.Namespace, lo.LabelSelector, lo.FieldSelector)
	rv := s.rv
	s.mu.Unlock()
	if err != nil {
		return err
	}
	// With UnsafeDisableDeepCopy the caller promises not to modify what it
	// gets, as controller-runtime's cache lets it: the items then share
	// their maps and slices with the stored objects.
	shared := lo.UnsafeDisableDeepCopy != nil && *lo.UnsafeDisableDeepCopy
	if shared || !copyInto(list, items) {
		out := make([]runtime.Object, len(items))
		for i, o := range items {
			if shared {
				out[i] = o
			} else {
				out[i] = o.DeepCopyObject()
			}
		}
		if err := meta.SetList(list, out); err != nil {
			return err
		}
	}
	list.SetResourceVersion(strconv.FormatInt(rv, 10))
	return nil
}

// copyInto sets the list's items to deep copies of objs, each made in its
// place in the list with the type's DeepCopyInto, instead of as a new object
// that is then copied into the list and dropped (what meta.SetList does
// with DeepCopyObject's results): lists of nodes and NodeClaims are large
// and asked for often. It reports false, having changed nothing, when the
// list is not a slice of the objects' type.
func copyInto(list client.ObjectList, objs []client.Object) bool {
	itemsPtr, err := meta.GetItemsPtr(list)
	if err != nil {
		return false
	}
	items := reflect.ValueOf(itemsPtr)
	if items.Kind() != reflect.Pointer || items.Elem().Kind() != reflect.Slice {
		return false
	}
	items = items.Elem()
	ptr := reflect.PointerTo(items.Type().Elem())
	m, ok := ptr.MethodByName("DeepCopyInto")
	if !ok || m.Type.NumIn() != 2 || m.Type.In(1) != ptr || m.Type.NumOut() != 0 {
		return false
	}
	for _, o := range objs {
		if reflect.TypeOf(o) != ptr {
			return false
		}
	}
	slice := reflect.MakeSlice(items.Type(), len(objs), len(objs))
	args := make([]reflect.Value, 2)
	for i, o := range objs {
		args[0], args[1] = reflect.ValueOf(o), slice.Index(i).Addr()
		m.Func.Call(args)
	}
	items.Set(slice)
	return true
}

// selectLocked returns the stored objects of gvk that match, in key order.
func (s *Server) selectLocked(gvk schema.GroupVersionKind, namespace string, ls labels.Selector, fs fields.Selector) ([]client.Object, error) {
	ks := s.store(gvk)
	var reqs fields.Requirements
	if fs != nil && !fs.Empty() {
		reqs = fs.Requirements()
	}
	var es []entry
	narrowed := false
	// An equality on an indexed field narrows the candidates at once.
	for _, r := range reqs {
		if idx, ok := ks.indexes[r.Field]; ok && (r.Operator == selection.Equals || r.Operator == selection.DoubleEquals) {
			keys := idx.keys(r.Value)
			es = make([]entry, len(keys))
			for i, k := range keys {
				es[i] = entry{key: k, obj: ks.objs[k]}
			}
			narrowed = true
			break
		}
	}
	if !narrowed {
		if namespace != "" && Namespaced(gvk) {
			es = ks.inNamespace(namespace)
		} else {
			es = ks.entries()
		}
	}
	var out []client.Object
	for _, e := range es {
		if namespace != "" && Namespaced(gvk) && e.key.Namespace != namespace {
			continue
		}
		o := e.obj
		if ls != nil && !ls.Empty() && !ls.Matches(labels.Set(o.GetLabels())) {
			continue
		}
		ok, err := matchFields(ks, o, reqs)
		if err != nil {
			return nil, fmt.Errorf("listing %s: %w", gvk.Kind, err)
		}
		if ok {
			out = append(out, o)
		}
	}
	return out, nil
}

func matchFields(ks *kindStore, o client.Object, reqs fields.Requirements) (bool, error) {
	for _, r := range reqs {
		var vals []string
		switch r.Field {
		case "metadata.name":
			vals = []string{o.GetName()}
		case "metadata.namespace":
			vals = []string{o.GetNamespace()}
		default:
			idx, ok := ks.indexes[r.Field]
			if !ok {
				return false, fmt.Errorf("field selector %q: no index for field %s", r.Field+string(r.Operator)+r.Value, r.Field)
			}
			vals = idx.fn(o)
		}
		has := slices.Contains(vals, r.Value)
		switch r.Operator {
		case selection.Equals, selection.DoubleEquals:
			if !has {
				return false, nil
			}
		case selection.NotEquals:
			if has {
				return false, nil
			}
		default:
			return false, fmt.Errorf("field selector operator %q is not supported", r.Operator)
		}
	}
	return true, nil
}

// Create implements client.Client.
func (s *Server) Create(_ context.Context, obj client.Object, opts ...client.CreateOption) error {
	co := client.CreateOptions{}
	co.ApplyOptions(opts)
	if len(co.DryRun) > 0 {
		return nil
	}
	gvk, err := s.gvkFor(obj)
	if err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	stored, err := s.createLocked(gvk, obj, time.Time{})
	if err != nil {
		return err
	}
	return assign(obj, stored.DeepCopyObject())
}

// Restore creates an object that existed before the run: one a snapshot of
// a cluster recorded. Unlike Create it keeps the object's creation time when
// that is before the clock's now, so that what counts an object's age (a
// NodePool's expireAfter, consolidateAfter, a pod's start) sees the age it
// had. Like Create it gives the object a UID of its own: owner references
// recorded with the object's old UID must be moved to the new one.
func (s *Server) Restore(_ context.Context, obj client.Object) error {
	gvk, err := s.gvkFor(obj)
	if err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	stored, err := s.createLocked(gvk, obj, obj.GetCreationTimestamp().Time)
	if err != nil {
		return err
	}
	return assign(obj, stored.DeepCopyObject())
}

// createLocked stores a new object, created now or, when created is before
// now, then.
func (s *Server) createLocked(gvk schema.GroupVersionKind, obj client.Object, created time.Time) (client.Object, error) {
	o := obj.DeepCopyObject().(client.Object)
	if Namespaced(gvk) {
		if o.GetNamespace() == "" {
			o.SetNamespace(metav1.NamespaceDefault)
		}
		nsKey := types.NamespacedName{Name: o.GetNamespace()}
		if s.store(namespaceGVK).objs[nsKey] == nil {
			return nil, apierrors.NewNotFound(resource(namespaceGVK), o.GetNamespace())
		}
	} else {
		o.SetNamespace("")
	}
	ks := s.store(gvk)
	if o.GetName() == "" {
		if o.GetGenerateName() == "" {
			return nil, apierrors.NewInvalid(gvk.GroupKind(), "", nil)
		}
		for {
			name := o.GetGenerateName() + s.suffix()
			if ks.objs[types.NamespacedName{Namespace: o.GetNamespace(), Name: name}] == nil {
				o.SetName(name)
				break
			}
		}
	}
	if ks.objs[types.NamespacedName{Namespace: o.GetNamespace(), Name: o.GetName()}] != nil {
		return nil, apierrors.NewAlreadyExists(resource(gvk), o.GetName())
	}
	if err := s.admit(gvk, o); err != nil {
		return nil, err
	}
	s.uidSeq++
	o.SetUID(types.UID(fmt.Sprintf("00000000-0000-4000-8000-%012x", s.uidSeq)))
	s.rv++
	o.SetResourceVersion(strconv.FormatInt(s.rv, 10))
	now := s.clock.Now()
	if created.IsZero() || !created.Before(now) {
		created = now
	}
	o.SetCreationTimestamp(s.stamp(created))
	o.SetGeneration(1)
	o.SetDeletionTimestamp(nil)
	o.SetDeletionGracePeriodSeconds(nil)
	o.SetManagedFields(nil)
	o.GetObjectKind().SetGroupVersionKind(schema.GroupVersionKind{})
	s.put(gvk, o)
	s.record(Change{Type: Added, GVK: gvk, Object: o})
	return o, nil
}

// suffixAlphabet is the API server's alphabet for generated names: no vowels
// (no words), no look-alike characters.
const suffixAlphabet = "bcdfghjklmnpqrstvwxz2456789"

func (s *Server) suffix() string {
	b := make([]byte, 5)
	for i := range b {
		b[i] = suffixAlphabet[s.rng.IntN(len(suffixAlphabet))]
	}
	return string(b)
}

// Update implements client.Client. Status is kept as stored.
func (s *Server) Update(_ context.Context, obj client.Object, opts ...client.UpdateOption) error {
	uo := client.UpdateOptions{}
	uo.ApplyOptions(opts)
	if len(uo.DryRun) > 0 {
		return nil
	}
	return s.write(obj, false, replaceWith(obj))
}

// replaceWith proposes obj as the new version, if it names the stored
// resource version or none.
func replaceWith(obj client.Object) func(schema.GroupVersionKind, client.Object) (client.Object, error) {
	return func(gvk schema.GroupVersionKind, cur client.Object) (client.Object, error) {
		if rv := obj.GetResourceVersion(); rv != "" && rv != cur.GetResourceVersion() {
			return nil, conflict(gvk, cur)
		}
		return obj.DeepCopyObject().(client.Object), nil
	}
}

// Patch implements client.Client. A patch that sets metadata.resourceVersion
// (as client.MergeFromWithOptimisticLock does) fails with a conflict unless
// it names the stored version.
func (s *Server) Patch(_ context.Context, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
	po := client.PatchOptions{}
	po.ApplyOptions(opts)
	if len(po.DryRun) > 0 {
		return nil
	}
	return s.write(obj, false, func(gvk schema.GroupVersionKind, cur client.Object) (client.Object, error) {
		return s.applyPatch(gvk, cur, obj, patch, false)
	})
}

// Apply implements client.Client. Server-side apply is not simulated.
func (s *Server) Apply(context.Context, runtime.ApplyConfiguration, ...client.ApplyOption) error {
	return fmt.Errorf("apiserver: server-side apply is not supported by the simulator; use Create, Update or Patch")
}

// applyPatch returns cur patched. For a write to the status subresource
// (status), only the result's status and resource version are used.
func (s *Server) applyPatch(gvk schema.GroupVersionKind, cur, obj client.Object, patch client.Patch, status bool) (client.Object, error) {
	out, err := patched(cur, obj, patch, status)
	if err != nil {
		return nil, err
	}
	if rv := out.GetResourceVersion(); rv != "" && rv != cur.GetResourceVersion() {
		return nil, conflict(gvk, cur)
	}
	return out, nil
}

// patched is cur with the patch of obj applied: through MergeFrom's
// shortcut, straight into a copy of cur (see mergeTyped), or the long way
// through JSON.
func patched(cur, obj client.Object, patch client.Patch, status bool) (client.Object, error) {
	if mf, ok := patch.(*mergeFrom); ok {
		if out, ok, err := mf.applyTo(cur, obj, status); ok || err != nil {
			return out, err
		}
	}
	data, err := patch.Data(obj)
	if err != nil {
		return nil, err
	}
	if typedMerge && patch.Type() == types.MergePatchType {
		if p, err := decodeJSON(data); err == nil {
			out := cur.DeepCopyObject().(client.Object)
			if mergeTyped(reflect.ValueOf(out).Elem(), p) {
				return out, nil
			}
		}
	}
	doc, err := json.Marshal(cur)
	if err != nil {
		return nil, err
	}
	var merged []byte
	switch patch.Type() {
	case types.MergePatchType:
		merged, err = MergePatch(doc, data)
	case types.JSONPatchType:
		merged, err = JSONPatch(doc, data)
	case types.StrategicMergePatchType:
		merged, err = strategicpatch.StrategicMergePatch(doc, data, cur.DeepCopyObject())
	default:
		return nil, fmt.Errorf("apiserver: patch type %s is not supported", patch.Type())
	}
	if err != nil {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("applying %s patch: %v", patch.Type(), err))
	}
	out := cur.DeepCopyObject().(client.Object)
	// Decode into a zero value of the type, so that fields the patch
	// removed are gone.
	if err := assign(out, zeroOf(out)); err != nil {
		return nil, err
	}
	if err := json.Unmarshal(merged, out); err != nil {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("decoding patched object: %v", err))
	}
	return out, nil
}

// typedMerge turns mergeTyped on; the tests turn it off to compare with
// the document path.
var typedMerge = true

func zeroOf(o runtime.Object) runtime.Object {
	return reflect.New(reflect.TypeOf(o).Elem()).Interface().(runtime.Object)
}

func conflict(gvk schema.GroupVersionKind, cur client.Object) error {
	return apierrors.NewConflict(resource(gvk), cur.GetName(),
		fmt.Errorf("the object has been modified; please apply your changes to the latest version and try again"))
}

// write runs an update of obj's stored version: mutate returns the proposed
// object, which write reconciles with the stored one (status or main
// resource, immutable metadata, generation, finalizers) and stores unless it
// changes nothing. obj receives the result.
func (s *Server) write(obj client.Object, status bool, mutate func(gvk schema.GroupVersionKind, cur client.Object) (client.Object, error)) error {
	gvk, err := s.gvkFor(obj)
	if err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	key := types.NamespacedName{Namespace: obj.GetNamespace(), Name: obj.GetName()}
	if !Namespaced(gvk) {
		key.Namespace = ""
	} else if key.Namespace == "" {
		key.Namespace = metav1.NamespaceDefault
	}
	cur := s.store(gvk).objs[key]
	if cur == nil {
		return apierrors.NewNotFound(resource(gvk), key.Name)
	}
	proposed, err := mutate(gvk, cur)
	if err != nil {
		return err
	}
	next, err := s.reconcileWrite(gvk, cur, proposed, status)
	if err != nil {
		return err
	}
	stored, err := s.commitLocked(gvk, cur, next)
	if err != nil {
		return err
	}
	return assign(obj, stored.DeepCopyObject())
}

// reconcileWrite returns what a write of proposed over cur stores.
func (s *Server) reconcileWrite(gvk schema.GroupVersionKind, cur, proposed client.Object, status bool) (client.Object, error) {
	var next client.Object
	if status {
		// Only the status changes.
		next = cur.DeepCopyObject().(client.Object)
		copyStatus(next, proposed)
	} else {
		// proposed is the write's own (a copy of the caller's object,
		// or what a patch decoded), so it is stored without another.
		next = proposed
		if hasStatus(next) {
			copyStatus(next, cur)
		}
		if cur.GetDeletionTimestamp() != nil {
			for _, f := range next.GetFinalizers() {
				if !slices.Contains(cur.GetFinalizers(), f) {
					return nil, apierrors.NewForbidden(resource(gvk), cur.GetName(),
						fmt.Errorf("no new finalizers can be added if the object is being deleted, found new finalizers %q", f))
				}
			}
		}
	}
	next.SetNamespace(cur.GetNamespace())
	next.SetName(cur.GetName())
	next.SetUID(cur.GetUID())
	next.SetCreationTimestamp(cur.GetCreationTimestamp())
	next.SetDeletionTimestamp(cur.GetDeletionTimestamp())
	next.SetDeletionGracePeriodSeconds(cur.GetDeletionGracePeriodSeconds())
	next.SetGeneration(cur.GetGeneration())
	next.SetResourceVersion(cur.GetResourceVersion())
	next.SetManagedFields(nil)
	next.GetObjectKind().SetGroupVersionKind(schema.GroupVersionKind{})
	if !status && specChanged(cur, next) {
		next.SetGeneration(cur.GetGeneration() + 1)
	}
	return next, nil
}

// commitLocked stores next in place of cur, unless nothing changed, and
// finishes a deletion whose last finalizer went. It returns what is stored
// (or what was last stored, if the object is gone).
func (s *Server) commitLocked(gvk schema.GroupVersionKind, cur, next client.Object) (client.Object, error) {
	if semanticEqual(cur, next) {
		return cur, nil
	}
	s.rv++
	next.SetResourceVersion(strconv.FormatInt(s.rv, 10))
	if next.GetDeletionTimestamp() != nil && len(next.GetFinalizers()) == 0 && !terminatingPod(gvk, next) {
		s.put(gvk, next)
		s.removeLocked(ref{gvk: gvk, namespace: next.GetNamespace(), name: next.GetName()}, cur)
		return next, nil
	}
	s.put(gvk, next)
	s.record(Change{Type: Modified, GVK: gvk, Object: next, Old: cur})
	return next, nil
}

// semanticEqual is equality.Semantic.DeepEqual(a, b) that looks at the
// objects' status first: most writes change the status alone, and the
// comparison then ends there instead of after the whole metadata and spec.
func semanticEqual(a, b client.Object) bool {
	va, vb := reflect.ValueOf(a), reflect.ValueOf(b)
	if va.Type() == vb.Type() && va.Kind() == reflect.Pointer && !va.IsNil() && !vb.IsNil() && va.Elem().Kind() == reflect.Struct {
		if f, ok := va.Elem().Type().FieldByName("Status"); ok && len(f.Index) == 1 {
			i := f.Index[0]
			if !equality.Semantic.DeepEqual(va.Elem().Field(i).Interface(), vb.Elem().Field(i).Interface()) {
				return false
			}
		}
	}
	return equality.Semantic.DeepEqual(a, b)
}

// specChanged reports whether anything but metadata and status differs: the
// writes that bump metadata.generation.
func specChanged(a, b client.Object) bool {
	ac, bc := a.DeepCopyObject(), b.DeepCopyObject()
	for _, o := range []runtime.Object{ac, bc} {
		clearMetaAndStatus(o)
	}
	return !equality.Semantic.DeepEqual(ac, bc)
}

// Status implements client.Client.
func (s *Server) Status() client.SubResourceWriter { return &subResource{s: s, name: "status"} }

// SubResource implements client.Client: status and eviction are supported.
func (s *Server) SubResource(name string) client.SubResourceClient {
	return &subResource{s: s, name: name}
}

type subResource struct {
	s    *Server
	name string
}

func (r *subResource) Get(_ context.Context, _ client.Object, _ client.Object, _ ...client.SubResourceGetOption) error {
	return fmt.Errorf("apiserver: getting subresource %q is not supported", r.name)
}

func (r *subResource) Create(ctx context.Context, obj client.Object, sub client.Object, _ ...client.SubResourceCreateOption) error {
	if r.name != "eviction" {
		return fmt.Errorf("apiserver: creating subresource %q is not supported", r.name)
	}
	return r.s.Evict(ctx, obj, sub)
}

func (r *subResource) Update(_ context.Context, obj client.Object, opts ...client.SubResourceUpdateOption) error {
	if r.name != "status" {
		return fmt.Errorf("apiserver: updating subresource %q is not supported", r.name)
	}
	uo := client.SubResourceUpdateOptions{}
	uo.ApplyOptions(opts)
	if len(uo.DryRun) > 0 {
		return nil
	}
	return r.s.write(obj, true, replaceWith(obj))
}

func (r *subResource) Patch(_ context.Context, obj client.Object, patch client.Patch, opts ...client.SubResourcePatchOption) error {
	if r.name != "status" {
		return fmt.Errorf("apiserver: patching subresource %q is not supported", r.name)
	}
	po := client.SubResourcePatchOptions{}
	po.ApplyOptions(opts)
	if len(po.DryRun) > 0 {
		return nil
	}
	return r.s.write(obj, true, func(gvk schema.GroupVersionKind, cur client.Object) (client.Object, error) {
		return r.s.applyPatch(gvk, cur, obj, patch, true)
	})
}

func (r *subResource) Apply(context.Context, runtime.ApplyConfiguration, ...client.SubResourceApplyOption) error {
	return fmt.Errorf("apiserver: server-side apply is not supported by the simulator")
}
