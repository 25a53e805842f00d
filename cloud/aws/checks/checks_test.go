package checks

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/runtime/schema"

	awsv1 "github.com/stevedore-autoscaler/stevedore/api/aws/v1"
	"github.com/stevedore-autoscaler/stevedore/api/validation"
)

func TestUserData(t *testing.T) {
	nodeClass := awsv1.GroupVersion.WithKind("EC2NodeClass")
	object := func(family string, userData any) map[string]interface{} {
		spec := map[string]interface{}{"amiSelectorTerms": []interface{}{map[string]interface{}{"alias": family + "@latest"}}}
		if userData != nil {
			spec["userData"] = userData
		}
		return map[string]interface{}{"apiVersion": "karpenter.k8s.aws/v1", "kind": "EC2NodeClass", "metadata": map[string]interface{}{"name": "default"}, "spec": spec}
	}
	// Within the limit as written, over it once merged.
	merged := "#!/bin/bash\n" + strings.Repeat("echo padding the user data\n", 600)
	tests := []struct {
		name string
		gvk  schema.GroupVersionKind
		obj  map[string]interface{}
		// want is in the message of the one problem; "" for none.
		want string
	}{
		{"no user data", nodeClass, object("al2023", nil), ""},
		{"small user data", nodeClass, object("al2023", "#!/bin/bash\necho hi\n"), ""},
		{"over once merged", nodeClass, object("al2023", merged), "is 16212 bytes, and 18222 bytes once merged with the AL2023 bootstrap configuration"},
		{"over as written", nodeClass, object("bottlerocket", "[settings.kubernetes]\n"+strings.Repeat("# comment\n", 2000)+"x = \""+strings.Repeat("y", 20000)+"\"\n"), "is 40029 bytes, over EC2's limit"},
		{"user data of the wrong type", nodeClass, object("al2023", int64(7)), ""},
		{"another kind", awsv1.GroupVersion.WithKind("EC2NodeClassList"), object("al2023", merged), ""},
		{"another group", schema.GroupVersionKind{Group: "example.com", Version: "v1", Kind: "EC2NodeClass"}, object("al2023", merged), ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			problems := UserData(tt.gvk, tt.obj)
			if tt.want == "" {
				if len(problems) != 0 {
					t.Fatalf("problems %+v, want none", problems)
				}
				return
			}
			if len(problems) != 1 {
				t.Fatalf("problems %+v, want one", problems)
			}
			p := problems[0]
			if p.Field != "spec.userData" || p.Severity != validation.SeverityError || !strings.Contains(p.Message, tt.want) || p.Fix != awsv1.UserDataTooLargeFix {
				t.Errorf("problem %+v, want an error at spec.userData saying %q, with the fix", p, tt.want)
			}
			if typical := strings.Contains(p.Message, "typical EKS cluster"); typical != strings.Contains(tt.want, "merged") {
				t.Errorf("message %q: says it was measured for a typical cluster: %v, want that only for the merged size", p.Message, typical)
			}
		})
	}
}

func TestValidator(t *testing.T) {
	v, err := Validator()
	if err != nil {
		t.Fatal(err)
	}
	doc := `apiVersion: karpenter.k8s.aws/v1
kind: EC2NodeClass
metadata: {name: big}
spec:
  role: KarpenterNodeRole-demo
  amiSelectorTerms: [{alias: al2023@latest}]
  subnetSelectorTerms: [{tags: {karpenter.sh/discovery: demo}}]
  securityGroupSelectorTerms: [{tags: {karpenter.sh/discovery: demo}}]
  userData: "` + strings.Repeat("x", 20000) + `"
`
	problems, err := v.Documents("big.yaml", strings.NewReader(doc))
	if err != nil {
		t.Fatal(err)
	}
	if len(problems) != 1 || problems[0].String() != "big.yaml#1: EC2NodeClass/big: spec.userData: is 20000 bytes, over EC2's limit of 16384 bytes of user data (16 KB, counted before base64 encoding); fix: "+awsv1.UserDataTooLargeFix {
		t.Errorf("problems %v, want the one of spec.userData", problems)
	}
}
