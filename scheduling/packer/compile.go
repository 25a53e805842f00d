package packer

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/component-helpers/scheduling/corev1/nodeaffinity"

	"github.com/stevedore-autoscaler/stevedore/api/wellknown"
	"github.com/stevedore-autoscaler/stevedore/scheduling/requirements"
	"github.com/stevedore-autoscaler/stevedore/scheduling/resources"
)

// hostPort is one host port a pod binds.
type hostPort struct {
	proto corev1.Protocol
	ip    string
	port  int32
}

// podHostPorts returns the host ports of pod's containers and of its
// restartable init containers, as the NodePorts filter counts them.
func podHostPorts(pod *corev1.Pod) []hostPort {
	var out []hostPort
	add := func(ports []corev1.ContainerPort) {
		for _, p := range ports {
			if p.HostPort <= 0 {
				continue
			}
			proto := p.Protocol
			if proto == "" {
				proto = corev1.ProtocolTCP
			}
			ip := p.HostIP
			if ip == "" {
				ip = "0.0.0.0"
			}
			out = append(out, hostPort{proto: proto, ip: ip, port: p.HostPort})
		}
	}
	// By index: a range copy of each Container cost more than the rest of
	// this function, which runs for every pod on every node Feasible sees.
	for i := range pod.Spec.InitContainers {
		c := &pod.Spec.InitContainers[i]
		if c.RestartPolicy != nil && *c.RestartPolicy == corev1.ContainerRestartPolicyAlways {
			add(c.Ports)
		}
	}
	for i := range pod.Spec.Containers {
		add(pod.Spec.Containers[i].Ports)
	}
	return out
}

// portsConflict reports whether a wants a host port that b already binds.
func portsConflict(a, b []hostPort) bool {
	for _, x := range a {
		for _, y := range b {
			if x.port == y.port && x.proto == y.proto && (x.ip == y.ip || x.ip == "0.0.0.0" || y.ip == "0.0.0.0") {
				return true
			}
		}
	}
	return false
}

// term is a pod (anti-)affinity term or a spread constraint's pod selector,
// resolved: which pods (namespace and labels) it selects and by which node
// label it groups them.
type term struct {
	key   string
	sel   labels.Selector
	nsAll bool
	ns    []string // sorted; used when !nsAll
	sig   string
	// all, when set, are every required affinity term of the owner: a pod
	// counts only when it matches each of them, as kube-scheduler counts
	// pods for a pod with several required affinity terms.
	all []term
}

func (t *term) matches(ns string, l map[string]string) bool {
	if !t.matchesOne(ns, l) {
		return false
	}
	for i := range t.all {
		if !t.all[i].matchesOne(ns, l) {
			return false
		}
	}
	return true
}

func (t *term) matchesOne(ns string, l map[string]string) bool {
	if !t.nsAll {
		if _, ok := slices.BinarySearch(t.ns, ns); !ok {
			return false
		}
	}
	return t.sel.Matches(labels.Set(l))
}

type groupKind uint8

const (
	// gMatch counts the pods a term selects, per domain.
	gMatch groupKind = iota
	// gSpread counts the pods a spread constraint selects, per domain, on
	// the nodes the constraint's owner considers.
	gSpread
	// gOwner counts the pods that own a required anti-affinity term, per
	// domain: pods the term selects are kept out of those domains.
	gOwner
)

// group is a shared counter over topology domains: every pod shape that
// carries the same term refers to the same group.
type group struct {
	id   int // index into state.groups
	kind groupKind
	t    term
	key  int // index into state.keys
	// Spread eligibility (gSpread only).
	honorAff bool
	affAlts  []requirements.Requirements
	// nodeAff, when set, judges the owner's required node affinity on
	// existing nodes instead of affAlts (it includes matchFields).
	nodeAff *nodeaffinity.RequiredNodeAffinity
	// keys, when set, are topology keys a node must all have to count.
	keys        []int
	honorTaints bool
	tols        []corev1.Toleration

	// tid is the cache's number of t plus one (see state.selected); 0
	// until looked up.
	tid int32
	// wide is 1 when the group counts on every node that has its key
	// (see everywhere), 2 when not, 0 until worked out.
	wide int8

	counts []int32 // by domain id
	total  int64
	elig   []int8 // by bin id: 0 unknown, 1 eligible, 2 not
	reg    []bool // by domain id: a domain the spread constraint considers
	nreg   int
}

func (g *group) count(d int32) int32 {
	if d < 0 || int(d) >= len(g.counts) {
		return 0
	}
	return g.counts[d]
}

func (g *group) inc(d int32, n int32) {
	for int(d) >= len(g.counts) {
		g.counts = append(g.counts, 0)
	}
	g.counts[d] += n
	g.total += int64(n)
}

// everywhere reports whether a spread group counts pods on every node that
// has its key: it needs no other key, honours no taint, and its owner's
// node affinity (when honoured) has an alternative without requirements,
// which every node meets. Its eligibility then needs no memo per bin.
func (g *group) everywhere() bool {
	if g.wide == 0 {
		g.wide = 2
		if len(g.keys) == 0 && !g.honorTaints && (!g.honorAff || g.nodeAff == nil && slices.ContainsFunc(g.affAlts, func(a requirements.Requirements) bool { return a.Len() == 0 })) {
			g.wide = 1
		}
	}
	return g.wide == 1
}

// reserveCounts makes room in g's counts for n domains, and the few that
// new claims add.
func (s *state) reserveCounts(g *group, n int) {
	if n > cap(g.counts) {
		g.counts = append(s.cache.scratch.ints.take(withClaims(n)), g.counts...)
	}
}

// withClaims is room for n domains of a key and the few more that a
// packing's new claims add (each its own hostname): growing a slice as long
// as the nodes for one claim would copy it all.
func withClaims(n int) int { return n + n/16 + 16 }

func (g *group) register(d int32) {
	for int(d) >= len(g.reg) {
		g.reg = append(g.reg, false)
	}
	if !g.reg[d] {
		g.reg[d] = true
		g.nreg++
	}
}

// spreadC is one topology spread constraint of a shape.
type spreadC struct {
	g          *group
	maxSkew    int32
	minDomains int32
	self       int32 // 1 when the owner matches its own selector
}

type prefKind uint8

const (
	prefPodAffinity prefKind = iota
	prefPodAntiAffinity
	prefNodeAffinity
	prefSpread
	prefTolerateSoft
)

// pref is one soft constraint that a variant may promote to a hard one.
type pref struct {
	kind   prefKind
	weight int32
	g      *group
	alt    requirements.Requirements
	spread spreadC
}

// extRes is an extended resource request.
type extRes struct {
	name  corev1.ResourceName
	value int64
}

// shape is a compiled pod: everything the packer needs about a pod, shared by
// all pending pods with the same signature.
type shape struct {
	id     int
	sig    string
	pod    *corev1.Pod // the first pod of the shape
	ns     string
	labels map[string]string

	req resources.Vector
	ext []extRes

	alts  []requirements.Requirements
	tols  []corev1.Toleration
	ports []hostPort

	spread    []spreadC // DoNotSchedule
	aff       []*group  // required pod affinity (gMatch)
	anti      []*group  // required pod anti-affinity (gMatch)
	ownsAnti  []*group  // gOwner groups this shape's required anti terms feed
	prefs     []pref
	matchedBy []*group // gMatch and gSpread groups that count this shape
	forbidden []*group // gOwner groups whose term selects this shape
	relevant  []int    // non-hostname topology keys a claim must be pinned on
	variants  []*variant
	// hostCounted: a hostname spread constraint counts the shape's pods.
	hostCounted bool
}

// compiler turns pods into shapes and terms into shared groups.
type compiler struct {
	s      *state
	shapes map[string]*shape
	list   []*shape
	// sigs, when set, memoizes the signatures of pods without volume
	// zones across packings.
	sigs *sigMemo
}

func (s *state) keyIndex(key string) int {
	if i, ok := s.keyIdx[key]; ok {
		return i
	}
	i := len(s.keys)
	s.keys = append(s.keys, key)
	s.keyIdx[key] = i
	s.domIdx = append(s.domIdx, map[string]int32{})
	s.domName = append(s.domName, nil)
	if key == wellknown.LabelHostname {
		s.hostKey = i
	}
	return i
}

func (s *state) domain(k int, value string) int32 {
	if s.cache != nil {
		if vid, ok := s.cache.valueID(s.cacheKey(k), value); ok {
			return s.domainOf(k, vid)
		}
	}
	if d, ok := s.domIdx[k][value]; ok {
		return d
	}
	d := int32(len(s.domName[k]))
	s.domIdx[k][value] = d
	s.domName[k] = append(s.domName[k], value)
	return d
}

// cacheKey is the cache's number of key k.
func (s *state) cacheKey(k int) int32 {
	for len(s.keyCID) <= k {
		s.keyCID = append(s.keyCID, s.cache.keyID(s.keys[len(s.keyCID)]))
	}
	return s.keyCID[k]
}

// cacheKeys are the cache's numbers of every key, by key index.
func (s *state) cacheKeys() []int32 {
	if len(s.keys) > 0 {
		s.cacheKey(len(s.keys) - 1)
	}
	return s.keyCID
}

// domainOf is the domain of key k whose value the cache numbers vid. It is
// the domain domain(k, value) gives: a value that came by name first (not
// yet seen on a node then) keeps its index, and one numbered first is found
// by number afterwards.
func (s *state) domainOf(k int, vid int32) int32 {
	for len(s.domOfVal) <= k {
		s.domOfVal = append(s.domOfVal, nil)
	}
	kid := s.cacheKey(k)
	tab := s.domOfVal[k]
	if int(vid) >= len(tab) {
		// The cache may number values while the nodes are added (the
		// first packing of a cluster): grow by half at least.
		n := max(int(vid)+1, len(s.cache.names[kid]), len(tab)+len(tab)/2)
		grown := s.cache.scratch.ints.take(n)[:n]
		clear(grown[copy(grown, tab):])
		tab = grown
		s.domOfVal[k] = tab
	}
	if d := tab[vid]; d != 0 {
		return d - 1
	}
	name := s.cache.names[kid][vid]
	d, ok := s.domIdx[k][name]
	if !ok {
		if len(s.domName[k]) == cap(s.domName[k]) {
			// Nodes mostly bring the values the cache has seen before,
			// thousands of hostnames among them: make room for them all.
			n := withClaims(max(len(s.cache.names[kid]), 2*len(s.domName[k])))
			s.domName[k] = append(s.cache.scratch.strs.take(n), s.domName[k]...)
		}
		d = int32(len(s.domName[k]))
		s.domName[k] = append(s.domName[k], name)
	}
	tab[vid] = d + 1
	return d
}

// resolveTerm resolves a pod affinity term of owner.
func (s *state) resolveTerm(owner *corev1.Pod, t corev1.PodAffinityTerm) (term, error) {
	sel, err := selectorWithKeys(t.LabelSelector, owner.Labels, t.MatchLabelKeys, t.MismatchLabelKeys)
	if err != nil {
		return term{}, err
	}
	out := term{key: wellknown.NormalizeLabel(t.TopologyKey), sel: sel}
	if len(t.Namespaces) == 0 && t.NamespaceSelector == nil {
		out.ns = []string{owner.Namespace}
	} else {
		ns := slices.Clone(t.Namespaces)
		if t.NamespaceSelector != nil {
			nsSel, err := metav1.LabelSelectorAsSelector(t.NamespaceSelector)
			if err != nil {
				return term{}, err
			}
			if nsSel.Empty() {
				out.nsAll = true
			} else {
				for name, l := range s.nsLabels {
					if nsSel.Matches(labels.Set(l)) {
						ns = append(ns, name)
					}
				}
			}
		}
		slices.Sort(ns)
		out.ns = slices.Compact(ns)
	}
	out.sig = termSig(&out)
	return out, nil
}

func termSig(t *term) string {
	var b strings.Builder
	b.WriteString(t.key)
	b.WriteByte(0)
	// A nil selector (selects nothing) and an empty one (selects
	// everything) both print as "".
	if _, ok := t.sel.Requirements(); !ok {
		b.WriteString("\x02nothing")
	} else {
		b.WriteString(t.sel.String())
	}
	b.WriteByte(0)
	if t.nsAll {
		b.WriteByte('*')
	} else {
		b.WriteString(strings.Join(t.ns, ","))
	}
	for i := range t.all {
		b.WriteString("\x03")
		b.WriteString(t.all[i].sig)
	}
	return b.String()
}

// selectorWithKeys returns sel with matchLabelKeys (In the owner's value)
// and mismatchLabelKeys (NotIn) merged in. A nil selector selects nothing.
func selectorWithKeys(ls *metav1.LabelSelector, own map[string]string, match, mismatch []string) (labels.Selector, error) {
	if ls == nil {
		return labels.Nothing(), nil
	}
	sel, err := metav1.LabelSelectorAsSelector(ls)
	if err != nil {
		return nil, err
	}
	add := func(keys []string, op selection.Operator) error {
		for _, k := range keys {
			v, ok := own[k]
			if !ok {
				continue
			}
			r, err := labels.NewRequirement(k, op, []string{v})
			if err != nil {
				return err
			}
			sel = sel.Add(*r)
		}
		return nil
	}
	if err := add(match, selection.In); err != nil {
		return nil, err
	}
	if err := add(mismatch, selection.NotIn); err != nil {
		return nil, err
	}
	return sel, nil
}

func (s *state) group(kind groupKind, t term, extra string) *group {
	return s.groupWithSig(kind, t, groupSig(kind, &t, extra))
}

// groupSig is the signature of the group of a kind for term t.
func groupSig(kind groupKind, t *term, extra string) string {
	return strconv.Itoa(int(kind)) + "\x01" + t.sig + "\x01" + extra
}

// groupWithSig is group for a signature already known to be groupSig's.
func (s *state) groupWithSig(kind groupKind, t term, sig string) *group {
	if g, ok := s.groupBySig[sig]; ok {
		return g
	}
	g := &group{id: len(s.groups), kind: kind, t: t, key: s.keyIndex(t.key)}
	s.groupBySig[sig] = g
	s.groups = append(s.groups, g)
	return g
}

// spreadGroup builds the group for a topology spread constraint of pod.
//
// keys are the topology keys of all the pod's constraints with the same
// whenUnsatisfiable: kube-scheduler leaves a node that lacks any of them out
// of the counts of every one (nodeLabelsMatchSpreadConstraints).
func (s *state) spreadConstraint(pod *corev1.Pod, alts []requirements.Requirements, c corev1.TopologySpreadConstraint, keys []int) (spreadC, error) {
	sel, err := selectorWithKeys(c.LabelSelector, pod.Labels, c.MatchLabelKeys, nil)
	if err != nil {
		return spreadC{}, err
	}
	// The pod counts itself when the selector matches it, but
	// kube-scheduler counts no existing pod for an empty selector
	// (countPodsMatchSelector), so the group counts nothing then.
	self := sel.Matches(labels.Set(pod.Labels))
	if sel.Empty() {
		sel = labels.Nothing()
	}
	t := term{key: wellknown.NormalizeLabel(c.TopologyKey), sel: sel, ns: []string{pod.Namespace}}
	t.sig = termSig(&t)
	honorAff := c.NodeAffinityPolicy == nil || *c.NodeAffinityPolicy == corev1.NodeInclusionPolicyHonor
	honorTaints := c.NodeTaintsPolicy != nil && *c.NodeTaintsPolicy == corev1.NodeInclusionPolicyHonor
	var extra strings.Builder
	if len(keys) > 1 {
		extra.WriteString("K:")
		for _, k := range keys {
			extra.WriteString(strconv.Itoa(k))
			extra.WriteByte(',')
		}
	}
	if honorAff {
		extra.WriteString("A:")
		for _, a := range alts {
			extra.WriteString(a.String())
			extra.WriteByte('|')
		}
	}
	if honorTaints {
		extra.WriteString("T:")
		js, _ := json.Marshal(pod.Spec.Tolerations)
		extra.Write(js)
	}
	g := s.group(gSpread, t, extra.String())
	g.honorAff, g.honorTaints = honorAff, honorTaints
	if len(keys) > 1 {
		g.keys = keys
	}
	if honorAff {
		g.affAlts = alts
	}
	if honorTaints {
		g.tols = pod.Spec.Tolerations
	}
	out := spreadC{g: g, maxSkew: c.MaxSkew, minDomains: 1}
	if c.MinDomains != nil {
		out.minDomains = *c.MinDomains
	}
	if self {
		out.self = 1
	}
	return out, nil
}

// ignoreReason says why the packer does not consider pod at all, or "".
func ignoreReason(pod *corev1.Pod, volumeZones map[types.NamespacedName][]string) string {
	if a := pod.Spec.Affinity; a != nil && a.NodeAffinity != nil && a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution != nil {
		for _, t := range a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms {
			if len(t.MatchFields) > 0 {
				return "the pod's required node affinity uses matchFields, which select nodes by name; a new node has no name yet, so use matchExpressions on labels instead"
			}
		}
	}
	for _, v := range pod.Spec.Volumes {
		if v.PersistentVolumeClaim != nil || v.Ephemeral != nil {
			if _, ok := volumeZones[types.NamespacedName{Namespace: pod.Namespace, Name: pod.Name}]; !ok {
				name := v.Name
				if v.PersistentVolumeClaim != nil {
					name = v.PersistentVolumeClaim.ClaimName
				}
				return fmt.Sprintf("the pod references persistent volume claim %q, whose zone is not known; the caller must pass its volume zones in Input.VolumeZones", name)
			}
		}
	}
	return ""
}

// podSig is the grouping signature of a pod: everything the packer reads from
// it except its name.
func podSig(pod *corev1.Pod, zones []string) string {
	var b strings.Builder
	b.WriteString(pod.Namespace)
	b.WriteByte(0)
	writeMap(&b, pod.Labels)
	writeMap(&b, pod.Spec.NodeSelector)
	writeRequests(&b, pod)
	b.WriteByte(0)
	b.WriteString(strings.Join(zones, ","))
	b.WriteByte(0)
	if pod.Spec.Affinity != nil {
		js, _ := json.Marshal(pod.Spec.Affinity)
		b.Write(js)
	}
	b.WriteByte(0)
	if len(pod.Spec.Tolerations) > 0 {
		js, _ := json.Marshal(pod.Spec.Tolerations)
		b.Write(js)
	}
	b.WriteByte(0)
	if len(pod.Spec.TopologySpreadConstraints) > 0 {
		js, _ := json.Marshal(pod.Spec.TopologySpreadConstraints)
		b.Write(js)
	}
	b.WriteByte(0)
	for _, p := range podHostPorts(pod) {
		fmt.Fprintf(&b, "%s/%s/%d,", p.proto, p.ip, p.port)
	}
	return b.String()
}

// writeRequests writes the raw requests that resources.Requests aggregates:
// every container's, with init containers marked, pod-level requests and
// the overhead.
func writeRequests(b *strings.Builder, pod *corev1.Pod) {
	var buf [24]byte
	// A quantity is written in millis, which determine every unit the
	// shape counts in, or exactly when that is too large (or too small)
	// for an int64: pods that differ there must not share a shape.
	quantity := func(q resource.Quantity) {
		if v := resources.MilliValue(q); v != resources.Infinite && v != math.MinInt64 {
			b.Write(strconv.AppendInt(buf[:0], v, 10))
			return
		}
		b.WriteByte('~')
		b.WriteString(q.String())
	}
	list := func(l corev1.ResourceList) {
		if len(l) == 1 {
			for k, q := range l {
				b.WriteString(string(k))
				b.WriteByte(':')
				quantity(q)
			}
			b.WriteByte(';')
			return
		}
		keys := make([]string, 0, len(l))
		for k := range l {
			keys = append(keys, string(k))
		}
		sort.Strings(keys)
		for _, k := range keys {
			b.WriteString(k)
			b.WriteByte(':')
			quantity(l[corev1.ResourceName(k)])
			b.WriteByte(',')
		}
		b.WriteByte(';')
	}
	for _, c := range pod.Spec.InitContainers {
		b.WriteByte('i')
		if c.RestartPolicy != nil {
			b.WriteString(string(*c.RestartPolicy))
		}
		list(c.Resources.Requests)
	}
	for _, c := range pod.Spec.Containers {
		b.WriteByte('c')
		list(c.Resources.Requests)
	}
	if pod.Spec.Resources != nil {
		b.WriteByte('p')
		list(pod.Spec.Resources.Requests)
	}
	if len(pod.Spec.Overhead) > 0 {
		b.WriteByte('o')
		list(pod.Spec.Overhead)
	}
}

func writeMap(b *strings.Builder, m map[string]string) {
	if len(m) == 1 {
		for k, v := range m {
			b.WriteString(k)
			b.WriteByte('=')
			b.WriteString(v)
		}
		b.WriteByte(0)
		return
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		b.WriteString(k)
		b.WriteByte('=')
		b.WriteString(m[k])
		b.WriteByte(',')
	}
	b.WriteByte(0)
}

// compile returns the shape of pod, building it the first time its signature
// is seen.
func (c *compiler) compile(pod *corev1.Pod, zones []string, hasZones bool) (*shape, error) {
	var sig string
	if c.sigs != nil && zones == nil {
		sig = c.sigs.of(pod)
	} else {
		sig = podSig(pod, zones)
	}
	if sh, ok := c.shapes[sig]; ok {
		return sh, nil
	}
	sh, err := c.s.compileShape(pod, resources.PodVector(pod), zones, hasZones)
	if err != nil {
		return nil, err
	}
	sh.sig = sig
	sh.id = len(c.list)
	c.shapes[sig] = sh
	c.list = append(c.list, sh)
	return sh, nil
}

var errNoZones = errors.New("the pod's volumes allow no zone")

func (s *state) compileShape(pod *corev1.Pod, req resources.Vector, zones []string, hasZones bool) (*shape, error) {
	sh := &shape{pod: pod, ns: pod.Namespace, labels: pod.Labels, req: req, tols: pod.Spec.Tolerations, ports: podHostPorts(pod)}
	for name := range resources.Requests(pod) {
		switch name {
		case corev1.ResourceCPU, corev1.ResourceMemory, corev1.ResourceEphemeralStorage, corev1.ResourcePods:
		default:
			sh.ext = append(sh.ext, extRes{name: name, value: req.Get(name)})
		}
	}
	slices.SortFunc(sh.ext, func(a, b extRes) int { return strings.Compare(string(a.name), string(b.name)) })
	alts, err := requirements.FromPod(pod)
	if err != nil {
		return nil, err
	}
	if hasZones && len(zones) > 0 {
		zr, err := requirements.NewRequirement(wellknown.LabelTopologyZone, corev1.NodeSelectorOpIn, zones...)
		if err != nil {
			return nil, err
		}
		for i := range alts {
			alts[i] = alts[i].Add(zr)
		}
	}
	sh.alts = alts
	var hardKeys, softKeys []int
	for _, c := range pod.Spec.TopologySpreadConstraints {
		k := s.keyIndex(wellknown.NormalizeLabel(c.TopologyKey))
		if c.WhenUnsatisfiable == corev1.ScheduleAnyway {
			softKeys = append(softKeys, k)
		} else {
			hardKeys = append(hardKeys, k)
		}
	}
	slices.Sort(hardKeys)
	hardKeys = slices.Compact(hardKeys)
	slices.Sort(softKeys)
	softKeys = slices.Compact(softKeys)
	for _, c := range pod.Spec.TopologySpreadConstraints {
		keys := hardKeys
		if c.WhenUnsatisfiable == corev1.ScheduleAnyway {
			keys = softKeys
		}
		sc, err := s.spreadConstraint(pod, alts, c, keys)
		if err != nil {
			return nil, err
		}
		if c.WhenUnsatisfiable == corev1.ScheduleAnyway {
			sh.prefs = append(sh.prefs, pref{kind: prefSpread, weight: 1, spread: sc})
		} else {
			sh.spread = append(sh.spread, sc)
		}
	}
	if a := pod.Spec.Affinity; a != nil {
		if pa := a.PodAffinity; pa != nil {
			var rts []term
			for _, t := range pa.RequiredDuringSchedulingIgnoredDuringExecution {
				rt, err := s.resolveTerm(pod, t)
				if err != nil {
					return nil, err
				}
				rts = append(rts, rt)
			}
			for _, rt := range rts {
				if len(rts) > 1 {
					// Only pods that match every term count for any of them.
					rt.all = rts
					rt.sig = termSig(&rt)
				}
				sh.aff = append(sh.aff, s.group(gMatch, rt, ""))
			}
			for _, w := range pa.PreferredDuringSchedulingIgnoredDuringExecution {
				rt, err := s.resolveTerm(pod, w.PodAffinityTerm)
				if err != nil {
					return nil, err
				}
				sh.prefs = append(sh.prefs, pref{kind: prefPodAffinity, weight: w.Weight, g: s.group(gMatch, rt, "")})
			}
		}
		if pa := a.PodAntiAffinity; pa != nil {
			for _, t := range pa.RequiredDuringSchedulingIgnoredDuringExecution {
				rt, err := s.resolveTerm(pod, t)
				if err != nil {
					return nil, err
				}
				sh.anti = append(sh.anti, s.group(gMatch, rt, ""))
				sh.ownsAnti = append(sh.ownsAnti, s.group(gOwner, rt, ""))
			}
			for _, w := range pa.PreferredDuringSchedulingIgnoredDuringExecution {
				rt, err := s.resolveTerm(pod, w.PodAffinityTerm)
				if err != nil {
					return nil, err
				}
				sh.prefs = append(sh.prefs, pref{kind: prefPodAntiAffinity, weight: w.Weight, g: s.group(gMatch, rt, "")})
			}
		}
		if na := a.NodeAffinity; na != nil {
			for _, w := range na.PreferredDuringSchedulingIgnoredDuringExecution {
				r, err := requirements.FromNodeSelectorTerm(w.Preference)
				if err != nil {
					continue // an empty or name-based preference cannot be expressed; ignore it
				}
				sh.prefs = append(sh.prefs, pref{kind: prefNodeAffinity, weight: w.Weight, alt: r})
			}
		}
	}
	return sh, nil
}

// link computes, once every group is known, which groups count a shape,
// which owner groups keep it out of domains, and which keys a new claim must
// be pinned on when the shape lands on it.
func (s *state) link(sh *shape) {
	sh.matchedBy, sh.forbidden, sh.relevant, sh.hostCounted = nil, nil, nil, false
	rel := map[int]bool{}
	for _, g := range s.groups {
		if !g.t.matches(sh.ns, sh.labels) {
			continue
		}
		if g.kind == gSpread && g.key == s.hostKey {
			sh.hostCounted = true
		}
		switch g.kind {
		case gOwner:
			sh.forbidden = append(sh.forbidden, g)
		default:
			sh.matchedBy = append(sh.matchedBy, g)
		}
		rel[g.key] = true
	}
	for _, c := range sh.spread {
		rel[c.g.key] = true
	}
	for _, g := range sh.aff {
		rel[g.key] = true
	}
	for _, g := range sh.anti {
		rel[g.key] = true
	}
	for _, p := range sh.prefs {
		switch p.kind {
		case prefPodAffinity, prefPodAntiAffinity:
			rel[p.g.key] = true
		case prefSpread:
			rel[p.spread.g.key] = true
		}
	}
	for k := range rel {
		if k != s.hostKey {
			sh.relevant = append(sh.relevant, k)
		}
	}
	slices.Sort(sh.relevant)
}
