package validation

import (
	"context"
	"fmt"
	"io"
	"os"
	"regexp"
	"slices"
	"sort"
	"strings"

	"k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsvalidation "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/validation"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Validator checks manifests against a set of CRDs. It is safe for
// concurrent use.
type Validator struct {
	served map[schema.GroupVersionKind]*servedKind
	// versions lists the served versions of every served group and kind.
	versions map[schema.GroupKind][]string
	// kinds lists the served kinds of every group that has CRDs.
	kinds map[string][]string
	// checks are the callers' own checks of served objects (With).
	checks []Check
}

// Check is a check of objects of the served kinds that needs code this
// package may not use, such as the AWS provider's user data generation: the
// caller adds it with With. It receives the object's kind and the object as
// the API server would store it (defaults applied), which it must not
// modify, and returns the problems it finds with Field, Message, Fix and
// Severity set. It is not called for fields that already have an error.
type Check func(gvk schema.GroupVersionKind, obj map[string]interface{}) []Problem

// With returns a Validator that also runs checks on every object of a
// served kind, after its own. v is unchanged, and the two share what they
// prepared from the CRDs.
func (v *Validator) With(checks ...Check) *Validator {
	out := *v
	out.checks = append(slices.Clip(v.checks), checks...)
	return &out
}

// New prepares a Validator for the served versions of the given CRDs, the way
// the API server prepares to serve them. It fails when a CRD schema is not
// one the API server would accept for serving (not structural, or with CEL
// rules that do not compile).
func New(crds []*apiextensionsv1.CustomResourceDefinition) (*Validator, error) {
	return newValidator(crds, true)
}

// newValidator is New, optionally without checking the CRDs themselves.
func newValidator(crds []*apiextensionsv1.CustomResourceDefinition, checkCRDs bool) (*Validator, error) {
	v := &Validator{
		served:   map[schema.GroupVersionKind]*servedKind{},
		versions: map[schema.GroupKind][]string{},
		kinds:    map[string][]string{},
	}
	for _, crd := range crds {
		if crd == nil {
			continue
		}
		if checkCRDs {
			if err := validateCRD(crd); err != nil {
				return nil, err
			}
		}
		gk := schema.GroupKind{Group: crd.Spec.Group, Kind: crd.Spec.Names.Kind}
		for _, ver := range crd.Spec.Versions {
			if !ver.Served {
				continue
			}
			sk, err := newServedKind(crd, ver)
			if err != nil {
				return nil, err
			}
			v.served[sk.gvk] = sk
			v.versions[gk] = append(v.versions[gk], ver.Name)
		}
		v.kinds[gk.Group] = append(v.kinds[gk.Group], gk.Kind)
	}
	for g := range v.kinds {
		sort.Strings(v.kinds[g])
	}
	return v, nil
}

// Object validates one object on its own: cross-object checks need the
// other objects and run only in Documents and Paths. The object is not
// modified.
func (v *Validator) Object(source string, obj *unstructured.Unstructured) []Problem {
	if obj == nil {
		return nil
	}
	d := v.check(context.Background(), source, obj.Object)
	sortByField(d.problems)
	return d.problems
}

// Documents validates a stream of YAML documents (separated by "---") or
// JSON values. source names the stream in the problems, with "#<n>" for the
// n-th document appended. A document that cannot be decoded is reported as a
// problem; the error is only for failures to read r.
func (v *Validator) Documents(source string, r io.Reader) ([]Problem, error) {
	data, err := io.ReadAll(r)
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", source, err)
	}
	b := &batch{v: v}
	b.addStream(source, data)
	return b.finish(), nil
}

// Paths validates files and directories; "-" reads stdin. Directories are
// walked recursively for *.yaml, *.yml and *.json files in lexical order,
// skipping hidden directories. Cross-object checks see every object read. A
// path that holds no object is an error. The error is for paths that cannot
// be read.
func (v *Validator) Paths(paths []string, stdin io.Reader) ([]Problem, error) {
	return v.PathsFrom(NewInput(stdin), paths)
}

// PathsFrom is Paths reading through in, so that the caller can read the
// same sources from in afterwards.
func (v *Validator) PathsFrom(in *Input, paths []string) ([]Problem, error) {
	b := &batch{v: v}
	for _, p := range paths {
		sources, err := in.Read(p)
		if err != nil {
			return nil, err
		}
		for _, w := range in.skipped[p] {
			d := &docResult{source: w.Source}
			d.problems = append(d.problems, w)
			b.docs = append(b.docs, d)
		}
		before := len(b.docs)
		for _, s := range sources {
			b.addStream(s.Name, s.Data)
		}
		if len(b.docs) == before {
			b.docs = append(b.docs, noObjects(p, len(sources), len(in.skipped[p])))
		}
	}
	return b.finish(), nil
}

// noObjects reports a path that holds no object: empty input is far more
// often a wrong path or a failed pipe than something meant.
func noObjects(p string, files, skipped int) *docResult {
	d := &docResult{source: p}
	problem := Problem{Message: "no objects found in " + p, Severity: SeverityError}
	switch {
	case p == "-":
		problem.Message = "no objects found in standard input"
		problem.Fix = "pipe the manifests in, for example: kustomize build overlays/prod | stevedore validate -f -"
	case files == 0 && skipped > 0:
		problem.Message += ": it has no .yaml, .yml or .json files that are regular files"
		problem.Fix = "name the directory or the files that hold the manifests"
	case files == 0:
		problem.Message += ": it has no .yaml, .yml or .json files"
		problem.Fix = "name the directory or the files that hold the manifests"
	case files == 1:
		if info, err := os.Stat(p); err == nil && info.IsDir() {
			problem.Message += ": its one manifest file holds only comments or empty documents"
		} else {
			problem.Message += ": the file holds only comments or empty documents"
		}
		problem.Fix = "add the manifests, or leave it out"
	default:
		problem.Message += fmt.Sprintf(": its %d manifest files hold only comments or empty documents", files)
		problem.Fix = "add the manifests, or leave it out"
	}
	d.add(problem)
	return d
}

// validateCRD checks a CRD the way the API server checks it when it is
// created: structural schema, pruned defaults, CEL rules that compile and fit
// the cost budget.
func validateCRD(crd *apiextensionsv1.CustomResourceDefinition) error {
	c := crd.DeepCopy()
	apiextensionsv1.SetObjectDefaults_CustomResourceDefinition(c)
	internal := &apiextensions.CustomResourceDefinition{}
	if err := apiextensionsv1.Convert_v1_CustomResourceDefinition_To_apiextensions_CustomResourceDefinition(c, internal, nil); err != nil {
		return fmt.Errorf("CRD %s: %w", crd.Name, err)
	}
	// The server records the storage version when it creates the CRD.
	internal.Status.StoredVersions = nil
	for _, ver := range internal.Spec.Versions {
		if ver.Storage {
			internal.Status.StoredVersions = append(internal.Status.StoredVersions, ver.Name)
		}
	}
	if errs := apiextensionsvalidation.ValidateCustomResourceDefinition(context.Background(), internal); len(errs) > 0 {
		return fmt.Errorf("CRD %s is not valid: %w", crd.Name, errs.ToAggregate())
	}
	return nil
}

// docResult is the outcome of checking one object.
type docResult struct {
	gvk schema.GroupVersionKind
	// typed is set when apiVersion and kind were read, so gvk is the
	// object's kind.
	typed     bool
	name      string
	namespace string
	source    string
	problems  []Problem
	// object is the object as the server would store it, for cross-object
	// checks; nil when the object is not one of the served kinds.
	object map[string]interface{}
}

func (d *docResult) add(p Problem) {
	p.Source = d.source
	p.Kind = d.gvk.Kind
	p.Name = d.name
	d.problems = append(d.problems, p)
}

// check validates one decoded object.
func (v *Validator) check(ctx context.Context, source string, obj map[string]interface{}) *docResult {
	d := &docResult{source: source}
	apiVersion, avOK := obj["apiVersion"].(string)
	kind, kOK := obj["kind"].(string)
	if meta, ok := obj["metadata"].(map[string]interface{}); ok {
		d.name, _ = meta["name"].(string)
		d.namespace, _ = meta["namespace"].(string)
	}
	if kOK {
		d.gvk.Kind = kind
	}
	if !avOK || apiVersion == "" || !kOK || kind == "" {
		v.missingTypeMeta(d, obj, apiVersion, kind)
		return d
	}
	gv, err := schema.ParseGroupVersion(apiVersion)
	if err != nil {
		d.add(Problem{Field: "apiVersion", Message: err.Error(), Fix: "write apiVersion as <group>/<version>, for example karpenter.sh/v1", Severity: SeverityError})
		return d
	}
	gvk := gv.WithKind(kind)
	d.gvk = gvk
	d.typed = true

	if sk, ok := v.served[gvk]; ok {
		v.checkServed(ctx, d, sk, obj)
		return d
	}
	if problems, ok := migrateOldKind(gvk, obj); ok {
		for _, p := range problems {
			d.add(p)
		}
		return d
	}
	if kinds, ok := v.kinds[gv.Group]; ok {
		v.unservedKind(ctx, d, obj, gvk, kinds)
		return d
	}
	if isBuiltin(gvk) {
		for _, p := range checkBuiltin(gvk, obj) {
			d.add(p)
		}
		return d
	}
	if isToolKind(gvk) {
		// Read and checked by the command it is for (a Scenario by
		// stevedore simulate).
		return d
	}
	if g, ok := knownGroups()[gv.Group]; ok {
		v.unknownKind(d, obj, gvk, g)
		return d
	}
	v.unknownGroup(d, gvk)
	return d
}

// unservedKind reports an object of a group stevedore serves at a version or
// kind it does not serve.
func (v *Validator) unservedKind(ctx context.Context, d *docResult, obj map[string]interface{}, gvk schema.GroupVersionKind, kinds []string) {
	versions := v.versions[gvk.GroupKind()]
	if len(versions) == 0 {
		fix := fmt.Sprintf("use one of the kinds %s serves: %s", gvk.Group, strings.Join(kinds, ", "))
		if g := closest(gvk.Kind, kinds); g != "" {
			fix = fmt.Sprintf("write kind: %s", g)
		}
		d.add(Problem{
			Field:    "kind",
			Message:  fmt.Sprintf("no kind %q is served in group %s", gvk.Kind, gvk.Group),
			Fix:      fix,
			Severity: SeverityError,
		})
		return
	}
	// Prefer v1 when it is served, else the first served version.
	target := versions[0]
	for _, ver := range versions {
		if ver == "v1" {
			target = ver
		}
	}
	newAPIVersion := schema.GroupVersion{Group: gvk.Group, Version: target}.String()
	p := Problem{
		Field:    "apiVersion",
		Message:  fmt.Sprintf("%s %s is served only at %s", gvk.GroupVersion(), gvk.Kind, strings.Join(versions, ", ")),
		Fix:      fmt.Sprintf("change apiVersion to %s", newAPIVersion),
		Severity: SeverityError,
	}
	if !legacyVersions[gvk] {
		d.add(p)
		return
	}
	// A pre-v1 version: check the object as if it were written for v1, so the
	// field changes it needs are listed too.
	p.Fix += " and apply the field changes listed for this object"
	converted := runtime.DeepCopyJSON(obj)
	converted["apiVersion"] = newAPIVersion
	sk := v.served[gvk.GroupKind().WithVersion(target)]
	d.gvk = sk.gvk
	v.checkServed(ctx, d, sk, converted)
	d.gvk = gvk
	for i := range d.problems {
		d.problems[i].Kind = gvk.Kind
	}
	d.add(p)
}

// missingTypeMeta reports a document without apiVersion or kind, guessing
// the kind from the fields it has.
func (v *Validator) missingTypeMeta(d *docResult, obj map[string]interface{}, apiVersion, kind string) {
	guess := ""
	switch {
	case has(obj, "spec.template.spec.nodeClassRef") || has(obj, "spec.disruption"):
		guess = "apiVersion: karpenter.sh/v1 and kind: NodePool"
	case has(obj, "spec.amiSelectorTerms") || has(obj, "spec.subnetSelectorTerms") || has(obj, "spec.role"):
		guess = "apiVersion: karpenter.k8s.aws/v1 and kind: EC2NodeClass"
	case has(obj, "spec.nodeClassRef"):
		guess = "apiVersion: karpenter.sh/v1 and kind: NodeClaim"
	}
	fix := "add apiVersion and kind, for example apiVersion: karpenter.sh/v1 and kind: NodePool"
	if guess != "" {
		fix = "add " + guess + " (the fields suggest it)"
	}
	if apiVersion == "" {
		msg := "apiVersion not set"
		if _, ok := obj["apiVersion"]; ok {
			msg = "apiVersion must be a non-empty string"
		}
		d.add(Problem{Field: "apiVersion", Message: msg, Fix: fix, Severity: SeverityError})
	}
	if kind == "" {
		msg := "kind not set"
		if _, ok := obj["kind"]; ok {
			msg = "kind must be a non-empty string"
		}
		d.add(Problem{Field: "kind", Message: msg, Fix: fix, Severity: SeverityError})
	}
}

func has(obj map[string]interface{}, path string) bool {
	_, ok := valueAt(obj, path)
	return ok
}

// checkServed runs the server pipeline and the semantic checks on an object
// of a served kind.
func (v *Validator) checkServed(ctx context.Context, d *docResult, sk *servedKind, obj map[string]interface{}) {
	res := sk.run(ctx, obj)
	errFields := map[string]bool{}
	// A number too large for its format draws two complaints; numberFormat
	// turns the one that says so into a clear problem, and the other
	// ("must be of type int32: float64") is dropped.
	reformatted := map[string]bool{}
	for i, c := range res.errs {
		if r := numberFormat(c, res.original); r.message != c.message {
			res.errs[i] = r
			reformatted[r.fieldOf()] = true
		}
	}
	for _, c := range res.errs {
		if c.err != nil && c.message == "" && reformatted[c.fieldOf()] && strings.Contains(c.err.Detail, "must be of type") {
			continue
		}
		fix := ""
		if c.unknownField != "" {
			if f, ok := legacyFieldFix(sk.gvk.Kind, c.unknownField, res.original); ok {
				fix = f
			}
		} else if f, ok := legacyValueFix(sk.gvk.Kind, c, res.original, res.object); ok {
			fix = f
		}
		if fix == "" {
			fix = sk.fixFor(c, res)
		}
		d.add(Problem{Field: c.fieldOf(), Message: c.messageOf(), Fix: fix, Severity: c.severity})
		if c.severity == SeverityError {
			errFields[c.fieldOf()] = true
		}
	}
	var semanticErrs []string
	for _, p := range semanticChecks(sk.gvk.Kind, res.object) {
		if coveredBy(p.Field, errFields) {
			continue
		}
		d.add(p)
		if p.Severity == SeverityError {
			semanticErrs = append(semanticErrs, p.Field)
		}
	}
	if len(v.checks) > 0 {
		for _, f := range semanticErrs {
			errFields[f] = true
		}
		for _, check := range v.checks {
			for _, p := range check(sk.gvk, res.object) {
				if !coveredBy(p.Field, errFields) {
					d.add(p)
				}
			}
		}
	}
	d.object = res.object
}

// coveredBy reports whether a field, or a field inside it, already has an
// error, so that a semantic check would only repeat it.
func coveredBy(f string, errFields map[string]bool) bool {
	for e := range errFields {
		if e == f || strings.HasPrefix(e, f+".") || strings.HasPrefix(e, f+"[") {
			return true
		}
	}
	return false
}

// batch collects the results of the documents of one validation run.
type batch struct {
	v    *Validator
	docs []*docResult
}

func (b *batch) addStream(source string, data []byte) {
	ctx := context.Background()
	docs, bad, err := splitDocuments(data)
	for _, doc := range docs {
		b.addDocument(ctx, source, doc)
	}
	if err != nil {
		d := &docResult{source: fmt.Sprintf("%s#%d", source, bad.index)}
		d.add(Problem{Message: err.Error(), Fix: "fix the JSON syntax at the position shown", Severity: SeverityError})
		b.docs = append(b.docs, d)
	}
}

// yamlLineRE finds the line number in a YAML decoding error.
var yamlLineRE = regexp.MustCompile(`\bline \d+`)

func (b *batch) addDocument(ctx context.Context, source string, doc document) {
	src := fmt.Sprintf("%s#%d", source, doc.index)
	value, warnings, err := decodeDocument(doc)
	if err != nil {
		d := &docResult{source: src}
		msg := err.Error()
		fix := "fix the YAML syntax at the line shown (indentation, a missing space after ':', or unquoted special characters)"
		if doc.json {
			fix = "fix the JSON syntax"
		}
		if strings.Contains(msg, "exceeded max depth") {
			// The decoder gives no line for this one.
			msg = "the document nests lists or mappings more deeply than the decoder allows (10000 levels): " + msg
			fix = "flatten the document: no Kubernetes object nests anywhere near that deep; look for a run of [ or { with no end"
		} else if !doc.json && !yamlLineRE.MatchString(msg) {
			fix = "fix the YAML syntax (indentation, a missing space after ':', or unquoted special characters)"
		}
		d.add(Problem{Message: msg, Fix: fix, Severity: SeverityError})
		b.docs = append(b.docs, d)
		return
	}
	if value == nil {
		return
	}
	obj, ok := value.(map[string]interface{})
	if !ok {
		d := &docResult{source: src}
		d.add(Problem{
			Message:  fmt.Sprintf("expected a Kubernetes object (a mapping with apiVersion and kind), found a %s", jsonKind(value)),
			Fix:      "write each object as a mapping with apiVersion, kind, metadata and spec, one per document",
			Severity: SeverityError,
		})
		b.docs = append(b.docs, d)
		return
	}
	if items, ok := listItems(obj); ok {
		for i, item := range items {
			itemSrc := fmt.Sprintf("%s/items[%d]", src, i)
			m, ok := item.(map[string]interface{})
			if !ok {
				d := &docResult{source: itemSrc}
				d.add(Problem{Message: "list item is not an object", Fix: "write each item as a mapping with apiVersion and kind", Severity: SeverityError})
				b.docs = append(b.docs, d)
				continue
			}
			b.docs = append(b.docs, b.v.check(ctx, itemSrc, m))
		}
		return
	}
	d := b.v.check(ctx, src, obj)
	for _, w := range warnings {
		d.add(w)
	}
	b.docs = append(b.docs, d)
}

// listItems returns the items of a v1 List (or any *List kind with items).
func listItems(obj map[string]interface{}) ([]interface{}, bool) {
	kind, _ := obj["kind"].(string)
	if !strings.HasSuffix(kind, "List") {
		return nil, false
	}
	items, ok := obj["items"].([]interface{})
	return items, ok
}

func jsonKind(v interface{}) string {
	switch v.(type) {
	case []interface{}:
		return "list"
	case string:
		return "string"
	case bool:
		return "boolean"
	default:
		return "number"
	}
}

// finish runs the cross-object checks and returns all problems, document by
// document in the order read, each document's problems ordered by field.
func (b *batch) finish() []Problem {
	b.duplicates()
	classes := map[string]bool{}
	for _, d := range b.docs {
		if d.gvk.Group == groupAWS && d.gvk.Kind == kindEC2NodeClass && d.name != "" {
			classes[d.name] = true
		}
	}
	for _, d := range b.docs {
		if d.object == nil {
			continue
		}
		refPath := ""
		switch d.gvk.Kind {
		case kindNodePool:
			refPath = "spec.template.spec.nodeClassRef"
		case kindNodeClaim:
			refPath = "spec.nodeClassRef"
		default:
			continue
		}
		ref, _ := valueAt(d.object, refPath)
		m, _ := ref.(map[string]interface{})
		group, _ := m["group"].(string)
		kind, _ := m["kind"].(string)
		name, _ := m["name"].(string)
		if group != groupAWS || kind != kindEC2NodeClass || name == "" || classes[name] {
			continue
		}
		d.add(Problem{
			Field:    refPath + ".name",
			Message:  fmt.Sprintf("EC2NodeClass %q is not found among the validated objects; it must exist in the cluster", name),
			Fix:      fmt.Sprintf("validate this %s together with the file that defines EC2NodeClass %q, or make sure it is applied to the cluster", d.gvk.Kind, name),
			Severity: SeverityWarning,
		})
	}
	var out []Problem
	for _, d := range b.docs {
		sortByField(d.problems)
		out = append(out, d.problems...)
	}
	return out
}
