package apiserver

import (
	"encoding/json"
	"reflect"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

func TestJSONAndMergePatch(t *testing.T) {
	doc := `{"a":{"b":1,"c":[1,2,3]},"d":"x"}`
	for _, tc := range []struct {
		name, patch, want string
		json, fail        bool
	}{
		{name: "merge sets and deletes", patch: `{"a":{"b":2,"c":null},"e":true}`, want: `{"a":{"b":2},"d":"x","e":true}`},
		{name: "merge replaces lists", patch: `{"a":{"c":[9]}}`, want: `{"a":{"b":1,"c":[9]},"d":"x"}`},
		{name: "add to a list", json: true, patch: `[{"op":"add","path":"/a/c/1","value":7}]`, want: `{"a":{"b":1,"c":[1,7,2,3]},"d":"x"}`},
		{name: "append", json: true, patch: `[{"op":"add","path":"/a/c/-","value":4}]`, want: `{"a":{"b":1,"c":[1,2,3,4]},"d":"x"}`},
		{name: "remove", json: true, patch: `[{"op":"remove","path":"/a/c/0"}]`, want: `{"a":{"b":1,"c":[2,3]},"d":"x"}`},
		{name: "replace", json: true, patch: `[{"op":"replace","path":"/d","value":"y"}]`, want: `{"a":{"b":1,"c":[1,2,3]},"d":"y"}`},
		{name: "move", json: true, patch: `[{"op":"move","from":"/d","path":"/a/d"}]`, want: `{"a":{"b":1,"c":[1,2,3],"d":"x"}}`},
		{name: "test passes", json: true, patch: `[{"op":"test","path":"/a/b","value":1}]`, want: doc},
		{name: "test fails", json: true, patch: `[{"op":"test","path":"/a/b","value":2}]`, fail: true},
		{name: "replace missing", json: true, patch: `[{"op":"replace","path":"/z","value":1}]`, fail: true},
		{name: "unknown op", json: true, patch: `[{"op":"frob","path":"/d"}]`, fail: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got []byte
			var err error
			if tc.json {
				got, err = JSONPatch([]byte(doc), []byte(tc.patch))
			} else {
				got, err = MergePatch([]byte(doc), []byte(tc.patch))
			}
			if tc.fail {
				if err == nil {
					t.Fatalf("no error; got %s", got)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != tc.want {
				t.Errorf("got %s, want %s", got, tc.want)
			}
		})
	}
}

// mergePatchShallow's result decodes to what MergePatch's does.
func TestMergePatchShallowMatchesMergePatch(t *testing.T) {
	p := running(pod("a", "n1", map[string]string{"app": "web", "<&>": "x"}), true)
	p.Annotations = map[string]string{"note": "caf\u00e9 <b>"}
	p.Spec.Priority = ptr(int32(2000001000))
	p.Spec.TerminationGracePeriodSeconds = ptr(int64(9007199254740993))
	podDoc, err := json.Marshal(p)
	if err != nil {
		t.Fatal(err)
	}
	docs := []string{
		`{"a":{"b":1,"c":[1,2,3]},"d":"x","n":null,"s":"\u003c"}`,
		string(podDoc),
	}
	patches := []string{
		`{}`,
		`{"a":{"b":2,"c":null},"e":true}`,
		`{"a":{"c":[9,{"x":null}]}}`,
		`{"a":"flat"}`,
		`{"n":{"x":1,"y":null}}`,
		`{"new":{"deep":{"er":12345678901234567890,"gone":null}}}`,
		`{"d":null,"zz":null}`,
		`{"metadata":{"labels":{"app":null,"tier":"front"},"annotations":null,"resourceVersion":"7"}}`,
		`{"status":{"conditions":[{"type":"Ready","status":"False"}],"phase":"Failed","hostIP":"10.0.0.1"}}`,
		`{"spec":{"priority":1,"nodeName":null,"containers":[]}}`,
		`[1,2]`,
		`"scalar"`,
	}
	for _, doc := range docs {
		for _, patch := range patches {
			want, err := MergePatch([]byte(doc), []byte(patch))
			if err != nil {
				t.Fatal(err)
			}
			got, err := mergePatchShallow([]byte(doc), []byte(patch))
			if err != nil {
				t.Fatal(err)
			}
			w, err := decodeJSON(want)
			if err != nil {
				t.Fatal(err)
			}
			g, err := decodeJSON(got)
			if err != nil {
				t.Fatalf("patch %s: result %s: %v", patch, got, err)
			}
			if !reflect.DeepEqual(g, w) {
				t.Errorf("patch %s to %.40s…:\n got %s\nwant %s", patch, doc, got, want)
			}
			if doc == string(podDoc) && patch[0] == '{' {
				var gp, wp corev1.Pod
				if err := json.Unmarshal(got, &gp); err != nil {
					t.Fatal(err)
				}
				if err := json.Unmarshal(want, &wp); err != nil {
					t.Fatal(err)
				}
				if !reflect.DeepEqual(gp, wp) {
					t.Errorf("patch %s: pods differ", patch)
				}
			}
		}
	}
	if _, err := mergePatchShallow([]byte(docs[0]), []byte(`{"a":`)); err == nil {
		t.Error("a broken patch was applied")
	}
}
