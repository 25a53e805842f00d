package fake_test

import (
	"os"
	"strings"
	"testing"
)

// contractDocs is the page whose table gives the contract test's verdicts.
const contractDocs = "../../../docs/aws.md"

// docServices are the names the table gives the sdk interfaces.
var docServices = map[string]string{
	"EC2": "EC2", "SSM": "SSM", "SQS": "SQS", "IAM": "IAM", "EKS": "EKS",
	"EventBridge": "EventBridge", "Pricing": "Pricing", "ARCZonalShift": "ARC zonal shift",
}

// TestContractDocs checks docs/aws.md's table of verdicts against the cases:
// every operation has a row, and every operation with a case moto lacks or
// answers differently has a row with that verdict.
func TestContractDocs(t *testing.T) {
	data, err := os.ReadFile(contractDocs)
	if err != nil {
		t.Fatal(err)
	}
	text := string(data)
	start := strings.Index(text, "### The in-memory AWS against moto")
	if start < 0 {
		t.Fatalf("%s has no section on the contract test against moto", contractDocs)
	}
	text = text[start:]
	if end := strings.Index(text[4:], "\n#"); end >= 0 {
		text = text[:end+4]
	}
	// verdicts holds, per operation cell, the verdicts of its rows (a row
	// with an empty operation cell continues the one above).
	verdicts := map[string][]string{}
	var current string
	for _, line := range strings.Split(text, "\n") {
		if !strings.HasPrefix(line, "| ") || strings.HasPrefix(line, "| ---") || strings.HasPrefix(line, "| Operation") {
			continue
		}
		cells := strings.Split(line, "|")
		if len(cells) < 5 {
			t.Fatalf("%s: short row %q", contractDocs, line)
		}
		if op := strings.TrimSpace(cells[1]); op != "" {
			current = op
		}
		verdicts[current] = append(verdicts[current], strings.TrimSpace(cells[3]))
	}
	if len(verdicts) == 0 {
		t.Fatalf("%s: no table of verdicts", contractDocs)
	}
	rowsOf := func(op string) []string {
		svc, method, _ := strings.Cut(op, ".")
		var out []string
		for cell, vs := range verdicts {
			if strings.HasPrefix(cell, docServices[svc]+" ") && strings.Contains(cell, "`"+method+"`") {
				out = append(out, vs...)
			}
		}
		return out
	}
	has := func(vs []string, prefix string) bool {
		for _, v := range vs {
			if strings.HasPrefix(v, prefix) {
				return true
			}
		}
		return false
	}
	for _, tc := range contractCases() {
		vs := rowsOf(tc.op)
		switch {
		case len(vs) == 0:
			t.Errorf("%s: no row for %s", contractDocs, tc.op)
		case tc.motoLacks != "" && !has(vs, "moto lacks"):
			t.Errorf("%s: %s (%s): moto lacks it, the table says %q", contractDocs, tc.op, tc.name, vs)
		case tc.differs != "" && !has(vs, "moto wrong") && !has(vs, "differs, harmlessly"):
			t.Errorf("%s: %s (%s): moto differs, the table says %q", contractDocs, tc.op, tc.name, vs)
		case tc.differs == "" && tc.motoLacks == "" && !has(vs, "same"):
			t.Errorf("%s: %s (%s): the two answer alike, the table says %q", contractDocs, tc.op, tc.name, vs)
		}
	}
}
