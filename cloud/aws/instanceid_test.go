package aws

import "testing"

func TestInstanceID(t *testing.T) {
	for in, want := range map[string]string{
		"aws:///us-east-1a/i-0123": "i-0123",
		"aws:///us-east-1a/":       "",
		"kind://x/i-1":             "",
		"":                         "",
	} {
		if got := InstanceID(in); got != want {
			t.Errorf("InstanceID(%q) = %q, want %q", in, got, want)
		}
	}
}
