package crds_test

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
	"sigs.k8s.io/yaml"

	awsv1 "github.com/stevedore-autoscaler/stevedore/api/aws/v1"
	karpv1 "github.com/stevedore-autoscaler/stevedore/api/karpenter/v1"
)

// apiDocument is one object of our API kinds found in an example manifest.
type apiDocument struct {
	source string // file and document index, for messages
	kind   string
	data   []byte
}

// exampleDocuments returns the NodePool, NodeClaim and EC2NodeClass documents
// of the manifests in examples/.
func exampleDocuments(t *testing.T) []apiDocument {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(moduleRoot(t), "examples", "*.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 {
		t.Fatal("no example manifests found")
	}
	var docs []apiDocument
	for _, file := range files {
		data, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		for i, doc := range bytes.Split(data, []byte("\n---")) {
			var head struct {
				APIVersion string `json:"apiVersion"`
				Kind       string `json:"kind"`
			}
			if err := yaml.Unmarshal(doc, &head); err != nil {
				t.Fatalf("%s document %d: %v", file, i, err)
			}
			switch head.APIVersion + " " + head.Kind {
			case "karpenter.sh/v1 NodePool", "karpenter.sh/v1 NodeClaim", "karpenter.k8s.aws/v1 EC2NodeClass":
				docs = append(docs, apiDocument{source: filepath.Base(file) + "#" + string(rune('0'+i)), kind: head.Kind, data: doc})
			}
		}
	}
	return docs
}

// newTyped returns an empty object of the given kind.
func newTyped(t *testing.T, kind string) any {
	t.Helper()
	switch kind {
	case "NodePool":
		return &karpv1.NodePool{}
	case "NodeClaim":
		return &karpv1.NodeClaim{}
	case "EC2NodeClass":
		return &awsv1.EC2NodeClass{}
	}
	t.Fatalf("unknown kind %s", kind)
	return nil
}

// TestExamplesAreAdmitted checks that every example object passes the CRD
// schema and CEL rules, and that no field would be dropped as unknown.
func TestExamplesAreAdmitted(t *testing.T) {
	docs := exampleDocuments(t)
	kinds := map[string]int{}
	for _, doc := range docs {
		kinds[doc.kind]++
		unknown, errs := newAdmitter(t, doc.kind).admit(toMap(t, doc.data), nil)
		if len(unknown) > 0 {
			t.Errorf("%s: the API server would drop unknown fields %v", doc.source, unknown)
		}
		for _, e := range errs {
			t.Errorf("%s: %v", doc.source, e)
		}
	}
	if kinds["NodePool"] == 0 || kinds["EC2NodeClass"] == 0 {
		t.Errorf("examples hold %v; want NodePools and EC2NodeClasses", kinds)
	}
}

// TestExamplesRoundTrip decodes every example object strictly into the Go
// types (a missing or misspelled field fails), encodes it again, and checks
// that nothing was lost and that the result is still admitted.
func TestExamplesRoundTrip(t *testing.T) {
	for _, doc := range exampleDocuments(t) {
		t.Run(doc.source, func(t *testing.T) {
			first := newTyped(t, doc.kind)
			if err := yaml.UnmarshalStrict(doc.data, first); err != nil {
				t.Fatalf("strict decode: %v", err)
			}
			encoded, err := json.Marshal(first)
			if err != nil {
				t.Fatal(err)
			}
			second := newTyped(t, doc.kind)
			if err := yaml.UnmarshalStrict(encoded, second); err != nil {
				t.Fatalf("strict decode of the re-encoded object: %v\n%s", err, encoded)
			}
			if !equality.Semantic.DeepEqual(first, second) {
				t.Errorf("round trip changed the object:\n first %+v\nsecond %+v", first, second)
			}

			// Every value the manifest set must survive, apart from the
			// normal forms of durations and quantities.
			original, again := toMap(t, doc.data), toMap(t, encoded)
			if missing := lostValues(original, again, ""); len(missing) > 0 {
				t.Errorf("encoding lost %v\n%s", missing, encoded)
			}

			// What Go writes, the API server must accept.
			unknown, errs := newAdmitter(t, doc.kind).admit(again, nil)
			if len(unknown) > 0 {
				t.Errorf("the API server would drop unknown fields %v from\n%s", unknown, encoded)
			}
			for _, e := range errs {
				t.Errorf("re-encoded object rejected: %v\n%s", e, encoded)
			}
		})
	}
}

// lostValues lists the paths of values in want that got has not kept. Strings
// that parse as the same duration or the same quantity count as kept.
func lostValues(want, got any, path string) []string {
	switch w := want.(type) {
	case map[string]any:
		g, ok := got.(map[string]any)
		if !ok {
			return []string{path}
		}
		var lost []string
		for k, v := range w {
			lost = append(lost, lostValues(v, g[k], path+"."+k)...)
		}
		return lost
	case []any:
		g, ok := got.([]any)
		if !ok || len(g) != len(w) {
			return []string{path}
		}
		var lost []string
		for i := range w {
			lost = append(lost, lostValues(w[i], g[i], path+"["+string(rune('0'+i))+"]")...)
		}
		return lost
	case string:
		if g, ok := got.(string); ok && (g == w || sameDuration(w, g) || sameQuantity(w, g)) {
			return nil
		}
		return []string{path}
	default:
		if reflect.DeepEqual(want, got) {
			return nil
		}
		return []string{path}
	}
}

func sameDuration(a, b string) bool {
	var x, y karpv1.NillableDuration
	if json.Unmarshal([]byte(`"`+a+`"`), &x) != nil || json.Unmarshal([]byte(`"`+b+`"`), &y) != nil {
		return false
	}
	return x.String() == y.String() && !strings.ContainsAny(a+b, " ")
}

func sameQuantity(a, b string) bool {
	x, errX := resource.ParseQuantity(a)
	y, errY := resource.ParseQuantity(b)
	return errX == nil && errY == nil && x.Cmp(y) == 0
}
