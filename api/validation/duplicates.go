package validation

import (
	"fmt"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/stevedore-autoscaler/stevedore/api/wellknown"
)

// objectKey identifies an object the way the API server stores it: group,
// kind, namespace (none for cluster-scoped kinds, "default" when a namespaced
// object names none, as stevedore plan and simulate take it) and name. The
// version does not count: apps/v1 and apps/v1beta2 Deployment web are the
// same object. ok is false for a document that names no object.
func (v *Validator) objectKey(d *docResult) (key objectKey, where string, ok bool) {
	if d.name == "" || !d.typed || isToolKind(d.gvk) {
		return objectKey{}, "", false
	}
	gk := d.gvk.GroupKind()
	namespaced := !wellknown.ClusterScoped(gk)
	if vs := v.versions[gk]; len(vs) > 0 {
		namespaced = v.served[gk.WithVersion(vs[0])].namespaced
	}
	ns := ""
	if namespaced {
		ns = d.namespace
		if ns == "" {
			ns = "default"
		}
		where = " in namespace " + ns
	}
	return objectKey{gk: gk, namespace: ns, name: d.name}, where, true
}

// objectKey is an object's identity in the API server's storage.
type objectKey struct {
	gk              schema.GroupKind
	namespace, name string
}

// duplicates reports every object that an earlier document of the batch
// already defines, naming both: kubectl apply would let the later one replace
// the earlier, and stevedore plan and simulate refuse the pair. It is the one
// check of duplicates behind validate, plan and simulate.
//
// A folder of scenarios (several Scenarios, each in a directory of its own,
// such as examples/troubleshooting) holds independent sets of objects: the
// objects under one Scenario's directory are not compared with those under
// another's. stevedore simulate runs one such directory at a time.
func (b *batch) duplicates() {
	roots := b.scenarioRoots()
	type seen struct {
		d    *docResult
		root string
	}
	first := map[objectKey][]seen{}
	for _, d := range b.docs {
		key, where, ok := b.v.objectKey(d)
		if !ok {
			continue
		}
		root := rootOf(d.source, roots)
		var f *docResult
		for _, s := range first[key] {
			if s.root == root || s.root == "" || root == "" {
				f = s.d
				break
			}
		}
		if f == nil {
			first[key] = append(first[key], seen{d, root})
			continue
		}
		d.add(Problem{
			Field:    "metadata.name",
			Message:  fmt.Sprintf("%s %q%s is defined twice: here and at %s", d.gvk.Kind, d.name, where, f.source),
			Fix:      fmt.Sprintf("keep one of the two (this one or the one at %s), or give one another name", f.source),
			Severity: SeverityError,
		})
	}
}

// scenarioRoots returns the directories of the Scenarios of the batch when
// there are several, each in a directory of its own; otherwise none.
func (b *batch) scenarioRoots() []string {
	var dirs []string
	for _, d := range b.docs {
		if d.typed && d.gvk.Group == groupStevedore && d.gvk.Kind == kindScenario {
			dirs = append(dirs, filepath.Dir(fileOf(d.source)))
		}
	}
	sort.Strings(dirs)
	if len(dirs) < 2 || len(slices.Compact(slices.Clone(dirs))) < len(dirs) {
		return nil
	}
	// Longest first, so that a nested directory wins over its parent.
	sort.Slice(dirs, func(i, j int) bool { return len(dirs[i]) > len(dirs[j]) })
	return dirs
}

// rootOf returns the root (see scenarioRoots) that the document at source is
// under, or "" when it is under none.
func rootOf(source string, roots []string) string {
	dir := filepath.Dir(fileOf(source))
	for _, r := range roots {
		if dir == r || strings.HasPrefix(dir, r+string(filepath.Separator)) {
			return r
		}
	}
	return ""
}

// fileOf returns the file of a document's source ("file#2/items[0]").
func fileOf(source string) string {
	if i := strings.LastIndex(source, "#"); i >= 0 {
		return source[:i]
	}
	return source
}
