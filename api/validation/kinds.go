package validation

import (
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/version"
)

// This file knows which API groups, versions and kinds exist, so that a
// misspelt kind or a version that does not exist is refused instead of
// skipped: the groups built into Kubernetes (those of builtinScheme), the
// groups of the CRDs the validator serves (handled by unservedKind) and
// stevedore's own tool kinds. Kinds of any other group are skipped with a
// warning.

// Scenario is the simulator's input (package sim/scenario reads and checks it
// strictly; the validator only knows that it exists).
const (
	groupStevedore = "stevedore.io"
	kindScenario   = "Scenario"
)

// toolKinds are the kinds of stevedore's own groups that are not served CRDs:
// documents that other commands read. The validator accepts them unchecked.
var toolKinds = []schema.GroupVersionKind{
	{Group: groupStevedore, Version: "v1alpha1", Kind: kindScenario},
}

// apiGroup is what the validator knows about one API group.
type apiGroup struct {
	// versions are the group's versions, the most stable and newest first
	// (v2, v1, v1beta2, v1beta1, v1alpha1).
	versions []string
	// kinds maps each version to its kinds, sorted; lists, options and
	// other kinds that are never manifests are left out.
	kinds map[string][]string
}

// allKinds returns the kinds of every version, sorted and without repeats.
func (g *apiGroup) allKinds() []string {
	var out []string
	for _, ks := range g.kinds {
		out = append(out, ks...)
	}
	sort.Strings(out)
	return slices.Compact(out)
}

// versionsOf returns the versions that have kind, in the group's order.
func (g *apiGroup) versionsOf(kind string) []string {
	var out []string
	for _, v := range g.versions {
		if slices.Contains(g.kinds[v], kind) {
			out = append(out, v)
		}
	}
	return out
}

// knownGroups are the built-in groups and stevedore's tool groups, by name.
var knownGroups = sync.OnceValue(func() map[string]*apiGroup {
	groups := map[string]*apiGroup{}
	add := func(gvk schema.GroupVersionKind) {
		if gvk.Version == runtime.APIVersionInternal || !isManifestKind(gvk.Kind) {
			return
		}
		g := groups[gvk.Group]
		if g == nil {
			g = &apiGroup{kinds: map[string][]string{}}
			groups[gvk.Group] = g
		}
		if _, ok := g.kinds[gvk.Version]; !ok {
			g.versions = append(g.versions, gvk.Version)
		}
		g.kinds[gvk.Version] = append(g.kinds[gvk.Version], gvk.Kind)
	}
	for gvk := range builtinScheme.AllKnownTypes() {
		add(gvk)
	}
	for _, gvk := range toolKinds {
		add(gvk)
	}
	for _, g := range groups {
		sort.Slice(g.versions, func(i, j int) bool {
			return version.CompareKubeAwareVersionStrings(g.versions[i], g.versions[j]) > 0
		})
		for v := range g.kinds {
			sort.Strings(g.kinds[v])
		}
	}
	return groups
})

// isManifestKind reports whether a kind of the scheme is one people write
// manifests of: not a list, not request options, not a watch event.
func isManifestKind(kind string) bool {
	switch {
	case strings.HasSuffix(kind, "List"), strings.HasSuffix(kind, "Options"):
		return false
	}
	switch kind {
	case "WatchEvent", "Status", "APIGroup", "APIVersions", "SerializedReference":
		return false
	}
	return true
}

func isToolKind(gvk schema.GroupVersionKind) bool {
	return slices.Contains(toolKinds, gvk)
}

// groupName names a group in messages.
func groupName(group string) string {
	if group == "" {
		return "the core API group"
	}
	return "API group " + group
}

// apiVersionOf writes group and version as an apiVersion.
func apiVersionOf(group, ver string) string {
	return schema.GroupVersion{Group: group, Version: ver}.String()
}

// unknownKind reports an object of a known group (built into Kubernetes, or
// one of stevedore's tool groups) whose version or kind does not exist.
func (v *Validator) unknownKind(d *docResult, obj map[string]interface{}, gvk schema.GroupVersionKind, g *apiGroup) {
	gv := gvk.GroupVersion().String()
	if versions := g.versionsOf(gvk.Kind); len(versions) > 0 {
		// The kind exists at other versions. Name the stable ones: most
		// of the alpha and beta versions client-go knows are no longer
		// served.
		var list []string
		for _, ver := range versions {
			if !strings.Contains(ver, "alpha") && !strings.Contains(ver, "beta") {
				list = append(list, apiVersionOf(gvk.Group, ver))
			}
		}
		if len(list) == 0 {
			for _, ver := range versions {
				list = append(list, apiVersionOf(gvk.Group, ver))
			}
		}
		target := gvk.GroupKind().WithVersion(versions[0])
		d.add(Problem{
			Field:    "apiVersion",
			Message:  fmt.Sprintf("%s has no kind %s; %s is at %s", gv, gvk.Kind, gvk.Kind, strings.Join(list, ", ")),
			Fix:      fmt.Sprintf("change apiVersion to %s", target.GroupVersion()),
			Severity: SeverityError,
		})
		// Check the rest of the object as if it were written for that
		// version, so that its other mistakes are listed too.
		if builtinScheme.Recognizes(target) {
			converted := runtime.DeepCopyJSON(obj)
			converted["apiVersion"] = target.GroupVersion().String()
			for _, p := range checkBuiltin(target, converted) {
				d.add(p)
			}
		}
		return
	}
	_, versionExists := g.kinds[gvk.Version]
	candidates := g.allKinds()
	where := groupName(gvk.Group)
	if versionExists {
		candidates = g.kinds[gvk.Version]
		where = gv
	}
	p := Problem{Field: "kind", Message: fmt.Sprintf("%s has no kind %q", where, gvk.Kind), Severity: SeverityError}
	guess := closest(gvk.Kind, candidates)
	if guess == "" && versionExists {
		// A kind of another version of the group.
		guess = closest(gvk.Kind, g.allKinds())
	}
	if guess != "" {
		if slices.Contains(g.kinds[gvk.Version], guess) {
			p.Fix = fmt.Sprintf("write kind: %s", guess)
		} else {
			p.Fix = fmt.Sprintf("write apiVersion: %s and kind: %s", apiVersionOf(gvk.Group, g.versionsOf(guess)[0]), guess)
		}
	} else if len(candidates) <= 12 {
		p.Fix = fmt.Sprintf("use one of the kinds of %s: %s", where, strings.Join(candidates, ", "))
	} else {
		group := gvk.Group
		if group == "" {
			group = "''" // the core group, as a shell word
		}
		p.Fix = fmt.Sprintf("check the spelling of the kind; `kubectl api-resources --api-group=%s` lists the kinds of the group", group)
	}
	if !versionExists {
		p.Message += fmt.Sprintf(" (and no version %s; its versions are %s)", gvk.Version, strings.Join(g.versions, ", "))
	}
	d.add(p)
}

// unknownGroup reports an object of a group that is neither built into
// Kubernetes nor stevedore's. Such an object is not checked: a warning, unless
// the group is certainly a misspelling (see groupTypo).
func (v *Validator) unknownGroup(d *docResult, gvk schema.GroupVersionKind) {
	if p, ok := v.groupTypo(gvk); ok {
		d.add(p)
		return
	}
	d.add(Problem{
		Field:    "apiVersion",
		Message:  fmt.Sprintf("%s is not an API group stevedore knows, so this %s is not checked", gvk.Group, gvk.Kind),
		Fix:      "make sure its CustomResourceDefinition is installed in the cluster; `kubectl apply --dry-run=server` checks the object against it",
		Severity: SeverityWarning,
	})
}

// groupTypo returns an error for an unknown group that cannot be meant: a
// group without a dot in its name (every group but Kubernetes' own has one:
// the API server requires it of a CRD's group), or a group close to a known
// one that has the same kind (apss/v1 Deployment, karpenter.sj/v1 NodePool).
func (v *Validator) groupTypo(gvk schema.GroupVersionKind) (Problem, bool) {
	// The groups, built-in or served, that have the kind, and the preferred
	// version of it in each.
	having := map[string]string{}
	var names []string
	for name, g := range knownGroups() {
		names = append(names, name)
		if vs := g.versionsOf(gvk.Kind); len(vs) > 0 {
			having[name] = vs[0]
		}
	}
	for name := range v.kinds {
		names = append(names, name)
		if vs := v.versions[schema.GroupKind{Group: name, Kind: gvk.Kind}]; len(vs) > 0 {
			having[name] = vs[0]
			if slices.Contains(vs, "v1") {
				having[name] = "v1"
			}
		}
	}
	sort.Strings(names)
	var withKind []string
	for name := range having {
		withKind = append(withKind, name)
	}
	sort.Strings(withKind)
	guess := ""
	if g := closest(gvk.Group, withKind); g != "" && g != gvk.Group {
		guess = g
	}
	dotless := !strings.Contains(gvk.Group, ".")
	if guess == "" && !dotless {
		return Problem{}, false
	}
	p := Problem{Field: "apiVersion", Severity: SeverityError}
	if dotless {
		p.Message = fmt.Sprintf("there is no API group %q: only Kubernetes' own groups have no dot in their name", gvk.Group)
	} else {
		p.Message = fmt.Sprintf("there is no API group %s with kind %s here; it looks like a misspelling", gvk.Group, gvk.Kind)
	}
	switch {
	case guess != "":
		p.Fix = fmt.Sprintf("change apiVersion to %s", apiVersionOf(guess, having[guess]))
	case len(withKind) == 1:
		p.Fix = fmt.Sprintf("change apiVersion to %s", apiVersionOf(withKind[0], having[withKind[0]]))
	default:
		if g := closest(gvk.Group, names); g != "" {
			p.Fix = fmt.Sprintf("check the group: did you mean %s? `kubectl api-resources` lists the kinds of each group", g)
		} else {
			p.Fix = "check the apiVersion; `kubectl api-versions` lists the groups and versions a cluster serves"
		}
	}
	return p, true
}
