package validation

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const configMap = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: settings}\ndata: {a: b}\n"

// writeFiles writes files (path relative to a new directory: content) and
// returns the directory.
func writeFiles(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, content := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// TestNoObjects checks that a path with no object in it is an error.
func TestNoObjects(t *testing.T) {
	v := testValidator(t)
	dir := writeFiles(t, map[string]string{
		"empty.yaml":          "",
		"comments.yaml":       "# nothing here\n---\n---\n\n",
		"none/README.md":      "not a manifest",
		"blank/a.yaml":        "\n",
		"blank/b.yml":         "---\n",
		"objects.yaml":        configMap,
		"broken.yaml":         "a: [\n",
		"list/empty.yaml":     "apiVersion: v1\nkind: List\nitems: []\n",
		"directory/pool.yaml": configMap,
	})
	for _, tc := range []struct {
		path string
		want string // "" for no such error
	}{
		{"empty.yaml", "no objects found in " + filepath.Join(dir, "empty.yaml") + ": the file holds only comments or empty documents"},
		{"comments.yaml", "the file holds only comments or empty documents"},
		{"none", "no objects found in " + filepath.Join(dir, "none") + ": it has no .yaml, .yml or .json files"},
		{"blank", "its 2 manifest files hold only comments or empty documents"},
		{"list", "its one manifest file holds only comments or empty documents"},
		{"objects.yaml", ""},
		{"broken.yaml", ""},
		{"directory", ""},
	} {
		t.Run(tc.path, func(t *testing.T) {
			p := filepath.Join(dir, tc.path)
			problems, err := v.Paths([]string{p}, nil)
			if err != nil {
				t.Fatal(err)
			}
			got, ok := find(problems, "", SeverityError, "no objects found")
			switch {
			case tc.want == "" && ok:
				t.Errorf("unexpected %s", got)
			case tc.want != "" && !ok:
				t.Errorf("want %q, got:%s", tc.want, dump(problems))
			case ok && (!strings.Contains(got.Message, tc.want) || got.Source != p || got.Fix == ""):
				t.Errorf("got %s\nwant %q from %s", got, tc.want, p)
			}
		})
	}
	// One empty path among others is still an error.
	problems, err := v.Paths([]string{filepath.Join(dir, "objects.yaml"), filepath.Join(dir, "empty.yaml")}, nil)
	if err != nil || !HasErrors(problems) {
		t.Errorf("an empty file among others: %v%s", err, dump(problems))
	}
	for _, stdin := range []string{"", "\n", "---\n# only a comment\n"} {
		problems, err := v.Paths([]string{"-"}, strings.NewReader(stdin))
		if err != nil {
			t.Fatal(err)
		}
		if p, ok := find(problems, "", SeverityError, "no objects found in standard input"); !ok || p.Source != "-" || !strings.Contains(p.Fix, "pipe") {
			t.Errorf("stdin %q:%s", stdin, dump(problems))
		}
	}
}

// TestDuplicates checks that an object defined twice is an error that names
// both places.
func TestDuplicates(t *testing.T) {
	v := testValidator(t)
	deployment := func(apiVersion, name, namespace string) string {
		ns := ""
		if namespace != "" {
			ns = ", namespace: " + namespace
		}
		return "apiVersion: " + apiVersion + "\nkind: Deployment\nmetadata: {name: " + name + ns + "}\n" +
			"spec:\n  selector: {matchLabels: {app: web}}\n  template:\n    metadata: {labels: {app: web}}\n    spec: {containers: [{name: web, image: web}]}\n"
	}
	for _, tc := range []struct {
		name  string
		input string
		want  []Problem // Source, Kind, Name, Field, Severity and a part of Message
	}{
		{
			name:  "twice in one file",
			input: validNodeClass + "---\n" + validNodePool + "---\n" + validNodePool,
			want: []Problem{{Source: "test.yaml#3", Kind: "NodePool", Name: "default", Field: "metadata.name", Severity: SeverityError,
				Message: `NodePool "default" is defined twice: here and at test.yaml#2`}},
		},
		{
			name:  "no namespace is the default namespace",
			input: deployment("apps/v1", "web", "") + "---\n" + deployment("apps/v1", "web", "default"),
			want: []Problem{{Source: "test.yaml#2", Kind: "Deployment", Name: "web", Field: "metadata.name", Severity: SeverityError,
				Message: `Deployment "web" in namespace default is defined twice: here and at test.yaml#1`}},
		},
		{
			name:  "other namespaces are other objects",
			input: deployment("apps/v1", "web", "a") + "---\n" + deployment("apps/v1", "web", "b") + "---\n" + deployment("apps/v1", "api", "a"),
		},
		{
			name:  "the version does not count",
			input: deployment("apps/v1", "web", "a") + "---\n" + deployment("apps/v1beta2", "web", "a"),
			want: []Problem{{Source: "test.yaml#2", Kind: "Deployment", Name: "web", Field: "metadata.name", Severity: SeverityError,
				Message: `Deployment "web" in namespace a is defined twice: here and at test.yaml#1`}},
		},
		{
			name:  "the group counts",
			input: "apiVersion: v1\nkind: Event\nmetadata: {name: e}\ninvolvedObject: {}\n---\napiVersion: events.k8s.io/v1\nkind: Event\nmetadata: {name: e}\neventTime: null\n",
		},
		{
			name:  "cluster-scoped kinds have no namespace",
			input: "apiVersion: v1\nkind: Namespace\nmetadata: {name: shop}\n---\napiVersion: v1\nkind: Namespace\nmetadata: {name: shop, namespace: default}\n",
			want: []Problem{{Source: "test.yaml#2", Kind: "Namespace", Name: "shop", Field: "metadata.name", Severity: SeverityError,
				Message: `Namespace "shop" is defined twice: here and at test.yaml#1`}},
		},
		{
			name:  "items of a List",
			input: "apiVersion: v1\nkind: List\nitems:\n- " + strings.ReplaceAll(strings.TrimSpace(configMap), "\n", "\n  ") + "\n---\n" + configMap,
			want: []Problem{{Source: "test.yaml#2", Kind: "ConfigMap", Name: "settings", Field: "metadata.name", Severity: SeverityError,
				Message: `ConfigMap "settings" in namespace default is defined twice: here and at test.yaml#1/items[0]`}},
		},
		{
			name:  "kinds of other groups",
			input: "apiVersion: cert-manager.io/v1\nkind: Certificate\nmetadata: {name: c}\n---\napiVersion: cert-manager.io/v1\nkind: Certificate\nmetadata: {name: c}\n",
			want: []Problem{
				{Source: "test.yaml#1", Kind: "Certificate", Name: "c", Field: "apiVersion", Severity: SeverityWarning, Message: "not checked"},
				{Source: "test.yaml#2", Kind: "Certificate", Name: "c", Field: "apiVersion", Severity: SeverityWarning, Message: "not checked"},
				{Source: "test.yaml#2", Kind: "Certificate", Name: "c", Field: "metadata.name", Severity: SeverityError, Message: `Certificate "c" in namespace default is defined twice`},
			},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := validate(t, v, tc.input)
			if len(got) != len(tc.want) {
				t.Fatalf("want %d problems, got:%s", len(tc.want), dump(got))
			}
			for i, w := range tc.want {
				g := got[i]
				if g.Source != w.Source || g.Kind != w.Kind || g.Name != w.Name || g.Field != w.Field || g.Severity != w.Severity ||
					!strings.Contains(g.Message, w.Message) || g.Fix == "" {
					t.Errorf("problem %d:\n got  %s %s\n want %s %s", i, g.Severity, g, w.Severity, w)
				}
			}
		})
	}

	// Across files, and across a folder of scenarios, each in a directory of
	// its own: those are separate sets of objects.
	scenario := func(name string) string {
		return "apiVersion: stevedore.io/v1alpha1\nkind: Scenario\nmetadata: {name: " + name + "}\n"
	}
	dir := writeFiles(t, map[string]string{
		"a/pool.yaml": validNodeClass + "---\n" + validNodePool, "a/scenario.yaml": scenario("a"),
		"b/pool.yaml": validNodeClass + "---\n" + validNodePool, "b/scenario.yaml": scenario("b"),
	})
	problems, err := v.Paths([]string{dir}, nil)
	if err != nil || len(problems) != 0 {
		t.Errorf("a folder of scenarios: %v%s", err, dump(problems))
	}
	problems, err = v.Paths([]string{filepath.Join(dir, "a"), filepath.Join(dir, "b", "pool.yaml")}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if p, ok := find(problems, "metadata.name", SeverityError, `EC2NodeClass "default" is defined twice: here and at `+filepath.Join(dir, "a", "pool.yaml#1")); !ok ||
		p.Source != filepath.Join(dir, "b", "pool.yaml#1") || len(problems) != 2 {
		t.Errorf("across files:%s", dump(problems))
	}
}
