// Package apiserver is the simulator's API server: an in-memory object store
// behind controller-runtime's client.Client, so that the production
// reconcilers read and write it exactly as they read and write a real one.
//
// It does what the controllers under simulation depend on the real API server
// (and the parts of kube-controller-manager that act at once) to do:
//
//   - names, UIDs, resource versions, generations and creation timestamps,
//     assigned deterministically (generated name suffixes come from a seeded
//     source, timestamps from the virtual clock);
//   - optimistic concurrency on updates and on merge patches that carry a
//     resource version, and no-op writes that change nothing and notify nobody;
//   - status subresources: writes to the main resource keep the stored status,
//     writes to status keep everything else;
//   - merge, JSON and strategic merge patches;
//   - deletion with finalizers (a deletionTimestamp until the last finalizer
//     goes), graceful pod deletion (a pod bound to a node gets a
//     deletionTimestamp its grace period ahead and stays until its kubelet
//     removes it), and owner-reference garbage collection in the background
//     style;
//   - the pods/eviction subresource, which enforces PodDisruptionBudgets the way
//     the real one does (see Evict);
//   - the admission defaults that matter to scheduling: pod priority from
//     PriorityClasses, resource defaults from the namespace's LimitRanges (as
//     the LimitRanger plugin gives them), the not-ready and unreachable
//     tolerations, grace periods, container port protocols, workload replica
//     counts;
//   - field selectors over registered indexes (pods by spec.nodeName, and any
//     index added with AddIndex), label selectors and namespaces on List;
//   - events, through Recorder.
//
// Every change is appended to a log that the owner drains (Drain) after each
// call into a controller: the runner feeds the changes to the cluster state and
// maps them to reconcile requests, as informers and watches would. Nothing is
// delivered while a controller runs, so no controller is re-entered.
//
// Objects in the store are never modified in place: a write stores a new copy.
// Objects handed out in Changes are the stored ones and must be treated as
// read-only; Get and List hand out copies.
package apiserver

import (
	"fmt"
	"maps"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"sync"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"

	"github.com/stevedore-autoscaler/stevedore/api/wellknown"
)

// ChangeType says what happened to an object.
type ChangeType string

// Change types, as a watch reports them.
const (
	Added    ChangeType = "Added"
	Modified ChangeType = "Modified"
	Deleted  ChangeType = "Deleted"
)

// Change is one write to the store.
type Change struct {
	Type ChangeType
	// GVK is the object's kind.
	GVK schema.GroupVersionKind
	// Object is the object after the change; for Deleted, its last state.
	Object client.Object
	// Old is the object before a Modified or Deleted change; nil for Added.
	Old client.Object
}

// IndexFunc returns the values of a field of an object, for field selectors.
type IndexFunc func(client.Object) []string

// Options configure a Server.
type Options struct {
	// Scheme knows every kind the server stores; required.
	Scheme *runtime.Scheme
	// Clock stamps creation and deletion times; required.
	Clock clock.PassiveClock
	// Seed seeds the suffixes of generated names.
	Seed uint64
	// LogEvictions keeps a record of every call of the eviction
	// subresource, with the budgets that covered the pod, for
	// DrainEvictions.
	LogEvictions bool
}

// Server is the in-memory API server. Create it with New. It is safe for
// concurrent use, though the simulator calls it from one goroutine.
type Server struct {
	scheme *runtime.Scheme
	clock  clock.PassiveClock

	mu      sync.Mutex
	rng     *rand.Rand
	kinds   map[schema.GroupVersionKind]*kindStore
	rv      int64
	uidSeq  uint64
	byUID   map[types.UID]ref
	owned   map[types.UID]map[ref]bool // dependents by owner UID
	changes []Change
	events  []Event
	mapper  meta.RESTMapper
	// selectors are the budgets' parsed selectors, by budget UID.
	selectors map[types.UID]*selector
	// seq numbers the stamps of kinds and index values (see Stamp).
	seq uint64
	// logEvictions is Options.LogEvictions; evictions the log kept.
	logEvictions bool
	evictions    []Eviction
}

// ref names a stored object.
type ref struct {
	gvk       schema.GroupVersionKind
	namespace string
	name      string
}

func (r ref) key() types.NamespacedName {
	return types.NamespacedName{Namespace: r.namespace, Name: r.name}
}

// kindStore holds the objects of one kind.
type kindStore struct {
	objs map[types.NamespacedName]client.Object
	// sorted are the objects in namespace/name order, once built (see
	// entries): kept current on every write rather than sorted again
	// after each, as reads in order follow almost every write.
	sorted []entry
	built  bool
	// indexes by field name: the index function and, per value, the keys
	// of the objects that have it.
	indexes map[string]*index
	// stamp changes whenever an object of the kind is stored or dropped.
	stamp uint64
	// byLabel indexes the objects by each of their labels (see
	// labelValue), for the kinds that budgets select (pods); nil for the
	// others. It is no field selector, and keeps no stamps: nothing reads
	// them, and labels with values of their own (pod hashes) would keep
	// adding to them.
	byLabel *index
}

// labelValues are the values of an object in a kindStore's byLabel index:
// one per label, its key and value joined by a byte that neither may hold.
func labelValues(o client.Object) []string {
	l := o.GetLabels()
	out := make([]string, 0, len(l))
	for k, v := range l {
		out = append(out, labelValue(k, v))
	}
	return out
}

func labelValue(k, v string) string { return k + "\x00" + v }

// entry is a stored object under its key.
type entry struct {
	key types.NamespacedName
	obj client.Object
}

type index struct {
	fn     IndexFunc
	values map[string]map[types.NamespacedName]bool
	// stamps change whenever an object with the value is stored or
	// dropped, so that a reader can tell whether a selection it made is
	// still current without making it again.
	stamps map[string]uint64
	// sorted are the keys of a value in namespace/name order, once asked
	// for, until the value gains or loses an object.
	sorted map[string][]types.NamespacedName
}

// New returns an empty Server.
func New(opts Options) (*Server, error) {
	if opts.Scheme == nil || opts.Clock == nil {
		return nil, fmt.Errorf("apiserver: a scheme and a clock are required")
	}
	s := &Server{
		scheme: opts.Scheme,
		clock:  opts.Clock,
		rng:    rand.New(rand.NewPCG(opts.Seed, 0x5eed0fa7)),
		kinds:  map[schema.GroupVersionKind]*kindStore{},
		byUID:  map[types.UID]ref{},
		owned:  map[types.UID]map[ref]bool{},

		logEvictions: opts.LogEvictions,
	}
	s.mapper = newRESTMapper(opts.Scheme)
	s.AddIndex(podGVK, "spec.nodeName", func(o client.Object) []string {
		return []string{o.(*corev1.Pod).Spec.NodeName}
	})
	s.AddIndex(corev1.SchemeGroupVersion.WithKind("Pod"), "status.phase", func(o client.Object) []string {
		return []string{string(o.(*corev1.Pod).Status.Phase)}
	})
	s.AddIndex(corev1.SchemeGroupVersion.WithKind("Pod"), "spec.schedulerName", func(o client.Object) []string {
		return []string{o.(*corev1.Pod).Spec.SchedulerName}
	})
	for _, gvk := range []schema.GroupVersionKind{podGVK, replicaSetGVK} {
		s.AddIndex(gvk, IndexController, controllerUID)
	}
	s.store(podGVK).byLabel = &index{fn: labelValues, values: map[string]map[types.NamespacedName]bool{},
		sorted: map[string][]types.NamespacedName{}}
	return s, nil
}

// IndexController is the field that indexes pods and ReplicaSets by the UID
// of their controller (the owner reference with controller set). It is the
// simulator's own: the real API server has no such field selector.
const IndexController = "metadata.controller"

func controllerUID(o client.Object) []string {
	for _, r := range o.GetOwnerReferences() {
		if r.Controller != nil && *r.Controller {
			return []string{string(r.UID)}
		}
	}
	return nil
}

// Select returns the stored objects of kind gvk whose indexed field has
// value, in namespace/name order. They are the stored objects themselves: do
// not modify them.
func (s *Server) Select(gvk schema.GroupVersionKind, field, value string) []client.Object {
	return s.selectIndexed(gvk, field, value, true)
}

// SelectUnordered is Select without the order: for a reader that sorts
// what it gets by an order of its own, which saves sorting the keys again
// after each change to the set. The order is Go's map order, so a reader
// must not let it decide anything.
func (s *Server) SelectUnordered(gvk schema.GroupVersionKind, field, value string) []client.Object {
	return s.selectIndexed(gvk, field, value, false)
}

func (s *Server) selectIndexed(gvk schema.GroupVersionKind, field, value string, ordered bool) []client.Object {
	s.mu.Lock()
	defer s.mu.Unlock()
	ks := s.store(gvk)
	idx, ok := ks.indexes[field]
	if !ok {
		return nil
	}
	if !ordered {
		set := idx.values[value]
		out := make([]client.Object, 0, len(set))
		for k := range set {
			out = append(out, ks.objs[k])
		}
		return out
	}
	keys := idx.keys(value)
	out := make([]client.Object, len(keys))
	for i, k := range keys {
		out[i] = ks.objs[k]
	}
	return out
}

// Stamp returns a number that changes whenever an object of kind gvk is
// stored or removed; it is 0 while none ever was. A reader that keeps what
// it built from the objects of a kind can rebuild it only when the stamp
// moved.
func (s *Server) Stamp(gvk schema.GroupVersionKind) uint64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	if ks, ok := s.kinds[gvk]; ok {
		return ks.stamp
	}
	return 0
}

// IndexStamp returns a number that changes whenever an object of kind gvk
// whose indexed field has (or had) value is stored or removed: while it
// stays the same, Select for the value returns the same objects. It is 0
// when no object ever had the value, or the field has no index.
func (s *Server) IndexStamp(gvk schema.GroupVersionKind, field, value string) uint64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	if ks, ok := s.kinds[gvk]; ok {
		if idx, ok := ks.indexes[field]; ok {
			return idx.stamps[value]
		}
	}
	return 0
}

// Len returns the number of stored objects of kind gvk.
func (s *Server) Len(gvk schema.GroupVersionKind) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	if ks, ok := s.kinds[gvk]; ok {
		return len(ks.objs)
	}
	return 0
}

// AddIndex lets List select objects of kind gvk by field, with the values fn
// returns. metadata.name and metadata.namespace need no index. Adding an
// index a second time replaces it.
func (s *Server) AddIndex(gvk schema.GroupVersionKind, field string, fn IndexFunc) {
	s.mu.Lock()
	defer s.mu.Unlock()
	ks := s.store(gvk)
	idx := &index{fn: fn, values: map[string]map[types.NamespacedName]bool{}, stamps: map[string]uint64{},
		sorted: map[string][]types.NamespacedName{}}
	s.seq++
	for k, o := range ks.objs {
		idx.add(k, o, s.seq)
	}
	ks.indexes[field] = idx
}

// keys returns the keys of the objects with value, in namespace/name order.
// The slice is the index's own: do not modify it.
func (i *index) keys(value string) []types.NamespacedName {
	keys, ok := i.sorted[value]
	if !ok {
		set := i.values[value]
		keys = make([]types.NamespacedName, 0, len(set))
		for k := range set {
			keys = append(keys, k)
		}
		slices.SortFunc(keys, compareKeys)
		i.sorted[value] = keys
	}
	return keys
}

// stamp records that the objects with value v changed at stamp, for an
// index that keeps stamps.
func (i *index) stamp(v string, stamp uint64) {
	if i.stamps != nil {
		i.stamps[v] = stamp
	}
}

func (i *index) add(k types.NamespacedName, o client.Object, stamp uint64) {
	i.addValues(k, i.fn(o), stamp)
}

func (i *index) addValues(k types.NamespacedName, vals []string, stamp uint64) {
	for _, v := range vals {
		i.stamp(v, stamp)
		m := i.values[v]
		if m == nil {
			m = map[types.NamespacedName]bool{}
			i.values[v] = m
		}
		if !m[k] {
			m[k] = true
			delete(i.sorted, v)
		}
	}
}

func (i *index) remove(k types.NamespacedName, o client.Object, stamp uint64) {
	i.removeValues(k, i.fn(o), stamp)
}

func (i *index) removeValues(k types.NamespacedName, vals []string, stamp uint64) {
	for _, v := range vals {
		i.stamp(v, stamp)
		if m := i.values[v]; m != nil && m[k] {
			delete(m, k)
			delete(i.sorted, v)
			if len(m) == 0 {
				delete(i.values, v)
			}
		}
	}
}

// replace moves k from the values of old to those of o. An object that
// keeps its values (most writes) stays where it is, with its values'
// stamps moved on.
func (i *index) replace(k types.NamespacedName, old, o client.Object, stamp uint64) {
	was, is := i.fn(old), i.fn(o)
	if slices.Equal(was, is) {
		for _, v := range is {
			i.stamp(v, stamp)
		}
		return
	}
	i.removeValues(k, was, stamp)
	i.addValues(k, is, stamp)
}

// Drain returns the changes and events recorded since the last Drain, in the
// order they happened, and forgets them.
func (s *Server) Drain() ([]Change, []Event) {
	s.mu.Lock()
	defer s.mu.Unlock()
	c, e := s.changes, s.events
	s.changes, s.events = nil, nil
	return c, e
}

// Pending reports whether changes or events wait to be drained.
func (s *Server) Pending() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.changes) > 0 || len(s.events) > 0
}

// Objects returns the stored objects of kind gvk in namespace/name order.
// They are the stored objects themselves: do not modify them.
func (s *Server) Objects(gvk schema.GroupVersionKind) []client.Object {
	s.mu.Lock()
	defer s.mu.Unlock()
	ks, ok := s.kinds[gvk]
	if !ok {
		return nil
	}
	es := ks.entries()
	out := make([]client.Object, len(es))
	for i, e := range es {
		out[i] = e.obj
	}
	return out
}

// Object returns the stored object, or nil. Do not modify it.
func (s *Server) Object(gvk schema.GroupVersionKind, namespace, name string) client.Object {
	s.mu.Lock()
	defer s.mu.Unlock()
	if ks, ok := s.kinds[gvk]; ok {
		return ks.objs[types.NamespacedName{Namespace: namespace, Name: name}]
	}
	return nil
}

// Kinds returns the kinds that have stored objects, sorted.
func (s *Server) Kinds() []schema.GroupVersionKind {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []schema.GroupVersionKind
	for gvk, ks := range s.kinds {
		if len(ks.objs) > 0 {
			out = append(out, gvk)
		}
	}
	slices.SortFunc(out, func(a, b schema.GroupVersionKind) int { return strings.Compare(a.String(), b.String()) })
	return out
}

func (s *Server) store(gvk schema.GroupVersionKind) *kindStore {
	ks, ok := s.kinds[gvk]
	if !ok {
		ks = &kindStore{objs: map[types.NamespacedName]client.Object{}, indexes: map[string]*index{}}
		s.kinds[gvk] = ks
	}
	return ks
}

// entries returns the stored objects in namespace/name order. The slice is
// the store's own and changes with the next write: do not keep it across
// one.
func (ks *kindStore) entries() []entry {
	if !ks.built {
		ks.sorted = make([]entry, 0, len(ks.objs))
		for k, o := range ks.objs {
			ks.sorted = append(ks.sorted, entry{key: k, obj: o})
		}
		slices.SortFunc(ks.sorted, compareEntries)
		ks.built = true
	}
	return ks.sorted
}

// inNamespace returns the entries of one namespace, which are adjacent in
// key order. Like entries, it is the store's own slice.
func (ks *kindStore) inNamespace(namespace string) []entry {
	es := ks.entries()
	lo, _ := slices.BinarySearchFunc(es, namespace, func(e entry, ns string) int { return strings.Compare(e.key.Namespace, ns) })
	hi := lo
	for hi < len(es) && es[hi].key.Namespace == namespace {
		hi++
	}
	return es[lo:hi]
}

// setSorted keeps the sorted entries current when o is stored under k (or,
// with o nil, when k is dropped).
func (ks *kindStore) setSorted(k types.NamespacedName, o client.Object) {
	if !ks.built {
		return
	}
	i, found := slices.BinarySearchFunc(ks.sorted, k, func(e entry, k types.NamespacedName) int { return compareKeys(e.key, k) })
	switch {
	case o == nil && found:
		ks.sorted = slices.Delete(ks.sorted, i, i+1)
	case o == nil:
	case found:
		ks.sorted[i].obj = o
	default:
		ks.sorted = slices.Insert(ks.sorted, i, entry{key: k, obj: o})
	}
}

func compareEntries(a, b entry) int { return compareKeys(a.key, b.key) }

func compareKeys(a, b types.NamespacedName) int {
	if c := strings.Compare(a.Namespace, b.Namespace); c != 0 {
		return c
	}
	return strings.Compare(a.Name, b.Name)
}

// put stores o (which the caller must not modify afterwards) under its key,
// maintaining the indexes, the UID map and the owner index.
func (s *Server) put(gvk schema.GroupVersionKind, o client.Object) {
	ks := s.store(gvk)
	k := types.NamespacedName{Namespace: o.GetNamespace(), Name: o.GetName()}
	old, existed := ks.objs[k]
	s.seq++
	ks.stamp = s.seq
	if existed {
		s.unindexOwners(gvk, old)
	}
	ks.objs[k] = o
	ks.setSorted(k, o)
	for _, idx := range ks.indexes {
		if existed {
			idx.replace(k, old, o, s.seq)
		} else {
			idx.add(k, o, s.seq)
		}
	}
	if ks.byLabel != nil {
		switch {
		case !existed:
			ks.byLabel.add(k, o, s.seq)
		case !maps.Equal(old.GetLabels(), o.GetLabels()):
			ks.byLabel.remove(k, old, s.seq)
			ks.byLabel.add(k, o, s.seq)
		}
	}
	r := ref{gvk: gvk, namespace: k.Namespace, name: k.Name}
	s.byUID[o.GetUID()] = r
	for _, or := range o.GetOwnerReferences() {
		m := s.owned[or.UID]
		if m == nil {
			m = map[ref]bool{}
			s.owned[or.UID] = m
		}
		m[r] = true
	}
}

// drop removes the stored object under r.
func (s *Server) drop(r ref) client.Object {
	ks := s.store(r.gvk)
	k := r.key()
	old, ok := ks.objs[k]
	if !ok {
		return nil
	}
	s.seq++
	ks.stamp = s.seq
	for _, idx := range ks.indexes {
		idx.remove(k, old, s.seq)
	}
	if ks.byLabel != nil {
		ks.byLabel.remove(k, old, s.seq)
	}
	s.unindexOwners(r.gvk, old)
	if r.gvk == pdbGVK {
		delete(s.selectors, old.GetUID())
	}
	delete(ks.objs, k)
	ks.setSorted(k, nil)
	if cur, ok := s.byUID[old.GetUID()]; ok && cur == r {
		delete(s.byUID, old.GetUID())
	}
	return old
}

func (s *Server) unindexOwners(gvk schema.GroupVersionKind, o client.Object) {
	r := ref{gvk: gvk, namespace: o.GetNamespace(), name: o.GetName()}
	for _, or := range o.GetOwnerReferences() {
		if m := s.owned[or.UID]; m != nil {
			delete(m, r)
			if len(m) == 0 {
				delete(s.owned, or.UID)
			}
		}
	}
}

func (s *Server) record(c Change) {
	s.changes = append(s.changes, c)
}

// gvkFor returns the kind of a typed object or list.
func (s *Server) gvkFor(obj runtime.Object) (schema.GroupVersionKind, error) {
	gvk, err := apiutil.GVKForObject(obj, s.scheme)
	if err != nil {
		return schema.GroupVersionKind{}, err
	}
	if _, ok := obj.(runtime.Unstructured); ok {
		return schema.GroupVersionKind{}, fmt.Errorf("apiserver: unstructured objects are not supported (%s); use typed objects", gvk)
	}
	return gvk, nil
}

// hasStatus reports whether the kind has a status subresource: every kind
// whose Go type has a Status field.
func hasStatus(o runtime.Object) bool {
	t := reflect.TypeOf(o)
	if t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	_, ok := t.FieldByName("Status")
	return ok
}

// copyStatus sets dst's Status field to src's.
func copyStatus(dst, src runtime.Object) {
	d := reflect.ValueOf(dst).Elem().FieldByName("Status")
	sv := reflect.ValueOf(src).Elem().FieldByName("Status")
	if d.IsValid() && sv.IsValid() && d.CanSet() {
		d.Set(sv)
	}
}

// assign copies src into dst; both are pointers to the same type.
func assign(dst, src runtime.Object) error {
	dv, sv := reflect.ValueOf(dst), reflect.ValueOf(src)
	if dv.Type() != sv.Type() {
		return fmt.Errorf("apiserver: cannot assign %T to %T", src, dst)
	}
	dv.Elem().Set(sv.Elem())
	return nil
}

// Namespaced reports whether objects of kind gvk live in a namespace.
func Namespaced(gvk schema.GroupVersionKind) bool { return !wellknown.ClusterScoped(gvk.GroupKind()) }

func newRESTMapper(scheme *runtime.Scheme) meta.RESTMapper {
	var gvs []schema.GroupVersion
	seen := map[schema.GroupVersion]bool{}
	kinds := scheme.AllKnownTypes()
	names := make([]schema.GroupVersionKind, 0, len(kinds))
	for gvk := range kinds {
		names = append(names, gvk)
	}
	slices.SortFunc(names, func(a, b schema.GroupVersionKind) int { return strings.Compare(a.String(), b.String()) })
	for _, gvk := range names {
		if !seen[gvk.GroupVersion()] {
			seen[gvk.GroupVersion()] = true
			gvs = append(gvs, gvk.GroupVersion())
		}
	}
	m := meta.NewDefaultRESTMapper(gvs)
	for _, gvk := range names {
		if strings.HasSuffix(gvk.Kind, "List") || strings.HasSuffix(gvk.Kind, "Options") || gvk.Version == runtime.APIVersionInternal {
			continue
		}
		scope := meta.RESTScopeNamespace
		if !Namespaced(gvk) {
			scope = meta.RESTScopeRoot
		}
		m.Add(gvk, scope)
	}
	return m
}
