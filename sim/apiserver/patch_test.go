package apiserver

import (
	"testing"
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
