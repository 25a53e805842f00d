package main

import (
	"encoding/json"
	"os"
	"strings"
	"testing"
)

// docBlock returns the fenced block that follows marker in the document.
func docBlock(t *testing.T, doc, marker string) string {
	t.Helper()
	i := strings.Index(doc, marker)
	if i < 0 {
		t.Fatalf("docs/aws.md lacks the marker %q", marker)
	}
	rest := doc[i+len(marker):]
	start := strings.Index(rest, "```json\n")
	if start < 0 {
		t.Fatalf("no ```json block after %q", marker)
	}
	rest = rest[start+len("```json\n"):]
	end := strings.Index(rest, "```")
	if end < 0 {
		t.Fatalf("unterminated block after %q", marker)
	}
	return rest[:end]
}

// TestIAMPolicyDocsMatchCommand keeps the policy in docs/aws.md equal to
// what `stevedore iam-policy` prints: regenerate the block with the command
// after changing the inventory.
func TestIAMPolicyDocsMatchCommand(t *testing.T) {
	raw, err := os.ReadFile("../../docs/aws.md")
	if err != nil {
		t.Fatal(err)
	}
	doc := string(raw)
	for _, tc := range []struct {
		marker string
		args   []string
	}{
		{"<!-- generated: stevedore iam-policy -->", []string{"iam-policy"}},
		{"<!-- generated: stevedore iam-policy --node-role -->", []string{"iam-policy", "--node-role"}},
	} {
		out, _, err := run(t, "", tc.args...)
		if err != nil {
			t.Fatal(err)
		}
		if got := docBlock(t, doc, tc.marker); got != out {
			t.Errorf("docs/aws.md block after %q differs from `stevedore %s`; paste the command's output there.\ncommand:\n%s\ndocs:\n%s",
				tc.marker, strings.Join(tc.args, " "), out, got)
		}
	}
}

func TestIAMPolicyFlags(t *testing.T) {
	out, _, err := run(t, "", "iam-policy", "--cluster-name", "demo", "--partition", "aws-cn", "--account-id", "111122223333",
		"--region", "cn-north-1", "--node-role-name", "NodeRole", "--interruption-queue", "demo-q")
	if err != nil {
		t.Fatal(err)
	}
	var pol struct {
		Statement []struct {
			Sid      string
			Resource []string
		}
	}
	if err := json.Unmarshal([]byte(out), &pol); err != nil {
		t.Fatalf("output is not JSON: %v\n%s", err, out)
	}
	if strings.Contains(out, "${") {
		t.Errorf("placeholders left with every flag set:\n%s", out)
	}
	for _, want := range []string{
		"arn:aws-cn:iam::111122223333:role/NodeRole",
		"arn:aws-cn:sqs:cn-north-1:111122223333:demo-q",
		"aws:RequestTag/kubernetes.io/cluster/demo",
		"arn:aws-cn:eks:cn-north-1:111122223333:cluster/demo",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q", want)
		}
	}
	for _, bad := range [][]string{{"--partition", "azure"}, {"--account-id", "12"}} {
		if _, _, err := run(t, "", append([]string{"iam-policy"}, bad...)...); err == nil {
			t.Errorf("iam-policy %v succeeded", bad)
		}
	}
}

// TestIAMPolicyZonalShift: --enable-zonal-shift adds the statement that
// reads the cluster's ARC zonal shifts, scoped by the cluster's ARN; the
// default policy does not carry it.
func TestIAMPolicyZonalShift(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want bool
	}{
		{[]string{"iam-policy", "--cluster-name", "demo", "--account-id", "111122223333", "--region", "eu-west-1"}, false},
		{[]string{"iam-policy", "--cluster-name", "demo", "--account-id", "111122223333", "--region", "eu-west-1", "--enable-zonal-shift"}, true},
	} {
		out, _, err := run(t, "", tc.args...)
		if err != nil {
			t.Fatal(err)
		}
		var pol struct {
			Statement []struct {
				Sid       string
				Action    []string
				Resource  []string
				Condition map[string]map[string][]string
			}
		}
		if err := json.Unmarshal([]byte(out), &pol); err != nil {
			t.Fatal(err)
		}
		found := false
		for _, s := range pol.Statement {
			if s.Sid != "AllowZonalShiftStatusReadOnly" {
				continue
			}
			found = true
			arn := s.Condition["StringEquals"]["arc-zonal-shift:ResourceIdentifier"]
			if len(s.Action) != 1 || s.Action[0] != "arc-zonal-shift:GetManagedResource" ||
				len(arn) != 1 || arn[0] != "arn:aws:eks:eu-west-1:111122223333:cluster/demo" {
				t.Errorf("zonal shift statement %+v", s)
			}
		}
		if found != tc.want {
			t.Errorf("%v: zonal shift statement present=%v, want %v", tc.args, found, tc.want)
		}
	}
}
