package acceptance

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/restmapper"

	"github.com/stevedore-autoscaler/stevedore/api/crds"
	"github.com/stevedore-autoscaler/stevedore/api/validation"
	"github.com/stevedore-autoscaler/stevedore/test/apiserver"
)

var (
	client    dynamic.Interface
	mapper    meta.RESTMapper
	validator *validation.Validator
)

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	all, err := crds.All()
	if err != nil {
		fmt.Fprintln(os.Stderr, "loading CRDs:", err)
		return 1
	}
	srv, err := apiserver.Start(apiserver.Options{CRDs: all})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer func() {
		if err := srv.Stop(); err != nil {
			fmt.Fprintln(os.Stderr, "stopping the API server:", err)
		}
	}()
	if client, err = dynamic.NewForConfig(srv.Config); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	dc, err := discovery.NewDiscoveryClientForConfig(srv.Config)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	mapper = restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(dc))
	if validator, err = validation.Default(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return m.Run()
}

// repoPath resolves a path relative to the repository root (two levels up).
func repoPath(t *testing.T, rel string) string {
	t.Helper()
	p, err := filepath.Abs(filepath.Join("..", "..", rel))
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func readObjects(t *testing.T, path string) []*unstructured.Unstructured {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
	var objs []*unstructured.Unstructured
	for {
		var m map[string]interface{}
		if err := dec.Decode(&m); err != nil {
			if errors.Is(err, io.EOF) {
				return objs
			}
			t.Fatalf("%s: %v", path, err)
		}
		if len(m) == 0 {
			continue
		}
		objs = append(objs, &unstructured.Unstructured{Object: m})
	}
}

func resourceFor(obj *unstructured.Unstructured) (dynamic.ResourceInterface, error) {
	gvk := obj.GroupVersionKind()
	mapping, err := mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	if err != nil {
		return nil, err
	}
	if mapping.Scope.Name() == meta.RESTScopeNameNamespace {
		ns := obj.GetNamespace()
		if ns == "" {
			ns = metav1.NamespaceDefault
		}
		return client.Resource(mapping.Resource).Namespace(ns), nil
	}
	return client.Resource(mapping.Resource), nil
}

// TestExamplesApply applies every shipped example the way `kubectl apply
// --server-side` does, with strict field validation, and checks the defaults the
// API server filled in.
func TestExamplesApply(t *testing.T) {
	files, err := filepath.Glob(repoPath(t, "examples/*.yaml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no examples found: %v", err)
	}
	ctx := context.Background()
	for _, file := range files {
		t.Run(filepath.Base(file), func(t *testing.T) {
			problems, err := validator.Paths([]string{file}, nil)
			if err != nil {
				t.Fatal(err)
			}
			for _, p := range problems {
				if p.Severity == validation.SeverityError {
					t.Errorf("offline validator rejects the example: %s", p)
				}
			}
			for _, obj := range readObjects(t, file) {
				ri, err := resourceFor(obj)
				if err != nil {
					t.Fatalf("%s %s: %v", obj.GetKind(), obj.GetName(), err)
				}
				data, err := obj.MarshalJSON()
				if err != nil {
					t.Fatal(err)
				}
				force := true
				got, err := ri.Patch(ctx, obj.GetName(), types.ApplyPatchType, data, metav1.PatchOptions{
					FieldManager: "stevedore-acceptance", Force: &force, FieldValidation: metav1.FieldValidationStrict,
				})
				if err != nil {
					t.Fatalf("the API server rejects %s %s: %v", obj.GetKind(), obj.GetName(), err)
				}
				checkDefaults(t, got)
			}
		})
	}
}

// checkDefaults asserts the CRD defaults users rely on when they leave a field out.
func checkDefaults(t *testing.T, obj *unstructured.Unstructured) {
	t.Helper()
	want := map[string][][]string{
		"NodePool": {
			{"spec", "template", "spec", "expireAfter"},
			{"spec", "disruption", "consolidationPolicy"},
			{"spec", "disruption", "consolidateAfter"},
			{"spec", "disruption", "budgets"},
		},
		"EC2NodeClass": {
			{"spec", "metadataOptions", "httpEndpoint"},
			{"spec", "metadataOptions", "httpProtocolIPv6"},
			{"spec", "metadataOptions", "httpPutResponseHopLimit"},
			{"spec", "metadataOptions", "httpTokens"},
		},
	}
	for _, path := range want[obj.GetKind()] {
		if _, found, err := unstructured.NestedFieldNoCopy(obj.Object, path...); !found || err != nil {
			t.Errorf("%s %s: %s was not defaulted by the API server", obj.GetKind(), obj.GetName(), strings.Join(path, "."))
		}
	}
	if obj.GetKind() == "EC2NodeClass" {
		if v, _, _ := unstructured.NestedString(obj.Object, "spec", "metadataOptions", "httpTokens"); v != "required" {
			t.Errorf("EC2NodeClass %s: metadataOptions.httpTokens defaulted to %q, want required (IMDSv2)", obj.GetName(), v)
		}
	}
}

// invalidCase is one file of the validation table.
type invalidCase struct {
	name        string
	field       string // the expected field path
	offlineOnly bool   // a check the API server does not make
	warning     bool   // the offline validator reports it as a warning
	obj         *unstructured.Unstructured
	raw         []byte
}

var headerLine = regexp.MustCompile(`^#\s*([a-z-]+):\s*(.*)$`)

func readInvalidCases(t *testing.T) []invalidCase {
	t.Helper()
	files, err := filepath.Glob(repoPath(t, "api/validation/testdata/invalid/*.yaml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no invalid cases found: %v", err)
	}
	var cases []invalidCase
	for _, file := range files {
		raw, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		c := invalidCase{name: strings.TrimSuffix(filepath.Base(file), ".yaml"), raw: raw}
		sc := bufio.NewScanner(bytes.NewReader(raw))
		for sc.Scan() {
			m := headerLine.FindStringSubmatch(sc.Text())
			if m == nil {
				if !strings.HasPrefix(sc.Text(), "#") {
					break
				}
				continue
			}
			switch m[1] {
			case "field":
				c.field = m[2]
			case "offline-only":
				c.offlineOnly = m[2] == "true"
			case "severity":
				c.warning = m[2] == string(validation.SeverityWarning)
			}
		}
		if c.field == "" {
			t.Fatalf("%s has no '# field:' header", file)
		}
		objs := readObjects(t, file)
		if len(objs) != 1 {
			t.Fatalf("%s holds %d objects, want 1", file, len(objs))
		}
		c.obj = objs[0]
		cases = append(cases, c)
	}
	return cases
}

// deleteServedObjects removes the NodePools, NodeClaims and EC2NodeClasses that
// earlier tests left behind.
func deleteServedObjects(ctx context.Context, t *testing.T) {
	t.Helper()
	for _, kind := range []string{"NodePool.karpenter.sh", "NodeClaim.karpenter.sh", "EC2NodeClass.karpenter.k8s.aws"} {
		gk := schema.ParseGroupKind(kind)
		mapping, err := mapper.RESTMapping(gk, "v1")
		if err != nil {
			t.Fatal(err)
		}
		if err := client.Resource(mapping.Resource).DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{}); err != nil {
			t.Fatalf("deleting %s: %v", kind, err)
		}
	}
}

var unknownField = regexp.MustCompile(`unknown field "([^"]+)"`)

// serverFields are the field paths the API server names in a rejection.
func serverFields(err error) []string {
	var fields []string
	var status apierrors.APIStatus
	if errors.As(err, &status) {
		if d := status.Status().Details; d != nil {
			for _, c := range d.Causes {
				// The server appends a cause without a field saying that CEL
				// rules were skipped because of the errors before it.
				if c.Field != "" && c.Field != "<nil>" {
					fields = append(fields, c.Field)
				}
			}
		}
	}
	for _, m := range unknownField.FindAllStringSubmatch(err.Error(), -1) {
		fields = append(fields, m[1])
	}
	slices.Sort(fields)
	return slices.Compact(fields)
}

// offlineFields are the field paths of the offline validator's findings of one
// severity.
func offlineFields(t *testing.T, c invalidCase, severity validation.Severity) []string {
	t.Helper()
	problems, err := validator.Documents(c.name, bytes.NewReader(c.raw))
	if err != nil {
		t.Fatal(err)
	}
	var fields []string
	for _, p := range problems {
		if p.Severity == severity {
			fields = append(fields, p.Field)
		}
	}
	slices.Sort(fields)
	return slices.Compact(fields)
}

// TestInvalidManifestsRejectedAlike sends every invalid manifest of the table to
// the API server and to the offline validator: both must reject it and name the
// same field paths. Cases marked offline-only are checks beyond the API server;
// for the served kinds the server must accept them, which shows the check is
// stevedore's own.
func TestInvalidManifestsRejectedAlike(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	// Dry-run creates validate exactly like real ones but persist nothing; the
	// examples applied earlier must not make a case fail with AlreadyExists.
	create := metav1.CreateOptions{FieldValidation: metav1.FieldValidationStrict, DryRun: []string{metav1.DryRunAll}}
	deleteServedObjects(ctx, t)
	for _, c := range readInvalidCases(t) {
		t.Run(c.name, func(t *testing.T) {
			severity := validation.SeverityError
			if c.warning {
				severity = validation.SeverityWarning
			}
			offline := offlineFields(t, c, severity)
			if !slices.Contains(offline, c.field) {
				t.Errorf("offline validator names %v as %ss, want %s among them", offline, severity, c.field)
			}
			ri, err := resourceFor(c.obj)
			if c.offlineOnly {
				if err != nil {
					// Older API versions and kinds are not served at all.
					if !meta.IsNoMatchError(err) {
						t.Fatalf("mapping %s: %v", c.obj.GroupVersionKind(), err)
					}
					return
				}
				if _, err := ri.Create(ctx, c.obj.DeepCopy(), create); err != nil {
					t.Fatalf("marked offline-only, but the API server rejects it too: %v (fields %v)", err, serverFields(err))
				}
				return
			}
			if err != nil {
				t.Fatalf("mapping %s: %v", c.obj.GroupVersionKind(), err)
			}
			_, err = ri.Create(ctx, c.obj.DeepCopy(), create)
			if err == nil {
				t.Fatalf("the API server accepted it; the offline validator says %v", offline)
			}
			server := serverFields(err)
			if !slices.Contains(server, c.field) {
				t.Errorf("the API server names %v, want %s among them (error: %v)", server, c.field, err)
			}
			if strings.Contains(err.Error(), "strict decoding error") {
				// The server stops at unknown fields; the offline validator goes
				// on to check the rest, so it may name more.
				for _, f := range server {
					if !slices.Contains(offline, f) {
						t.Errorf("the API server names %s, the offline validator does not (offline: %v)", f, offline)
					}
				}
			} else if !slices.Equal(server, offline) {
				t.Errorf("field paths differ:\n  API server: %v\n  offline:    %v\n  server error: %v", server, offline, err)
			}
		})
	}
}
