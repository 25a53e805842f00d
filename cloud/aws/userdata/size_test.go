package userdata

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"testing"

	awsv1 "github.com/stevedore-autoscaler/stevedore/api/aws/v1"
)

// script is a shell script of exactly n bytes (n >= 14).
func script(n int) string {
	const head = "#!/bin/bash\n# "
	return head + strings.Repeat("x", n-len(head)-1) + "\n"
}

// sysctlTOML is Bottlerocket TOML of about n bytes: kernel settings, which
// the merge keeps.
func sysctlTOML(n int) string {
	var b strings.Builder
	b.WriteString("[settings.kernel.sysctl]\n")
	for i := 0; b.Len() < n-45; i++ {
		fmt.Fprintf(&b, "\"net.ipv4.conf.eth%05d.rp_filter\" = \"1\"\n", i)
	}
	return b.String()
}

// overhead is how many bytes the family's merge adds to a user shell script.
func overhead(t *testing.T, family awsv1.AMIFamily) int {
	t.Helper()
	out, err := Generate(family, withUserData(base(), script(1000)))
	if err != nil {
		t.Fatal(err)
	}
	return len(out) - 1000
}

func TestSizeLimit(t *testing.T) {
	al2023 := overhead(t, awsv1.AMIFamilyAL2023)
	al2 := overhead(t, awsv1.AMIFamilyAL2)
	// Bottlerocket drops comments when it rewrites the TOML, so user data
	// over the limit as written may fit once merged.
	commented := "# " + strings.Repeat("c", MaxBytes) + "\n[settings.host-containers.admin]\nenabled = true\n"
	tests := []struct {
		name     string
		family   awsv1.AMIFamily
		userData string
		// wantSize is the size of the refused user data; 0 when it fits.
		wantSize int
	}{
		{"Custom at the limit", awsv1.AMIFamilyCustom, script(MaxBytes), 0},
		{"Custom one byte over", awsv1.AMIFamilyCustom, script(MaxBytes + 1), MaxBytes + 1},
		{"Custom far over", awsv1.AMIFamilyCustom, script(20 << 20), 20 << 20},
		{"AL2023 merged to the limit", awsv1.AMIFamilyAL2023, script(MaxBytes - al2023), 0},
		{"AL2023 merged one byte over", awsv1.AMIFamilyAL2023, script(MaxBytes - al2023 + 1), MaxBytes + 1},
		{"AL2023 under the limit alone, over merged", awsv1.AMIFamilyAL2023, script(MaxBytes - 100), MaxBytes - 100 + al2023},
		{"AL2 merged to the limit", awsv1.AMIFamilyAL2, script(MaxBytes - al2), 0},
		{"AL2 under the limit alone, over merged", awsv1.AMIFamilyAL2, script(MaxBytes - 10), MaxBytes - 10 + al2},
		{"Bottlerocket small", awsv1.AMIFamilyBottlerocket, sysctlTOML(2000), 0},
		{"Bottlerocket under the limit alone, over merged", awsv1.AMIFamilyBottlerocket, sysctlTOML(MaxBytes - 200), -1},
		{"Bottlerocket over the limit as written, comments dropped", awsv1.AMIFamilyBottlerocket, commented, 0},
		{"Windows over", awsv1.AMIFamilyWindows2022, "<powershell>\n" + strings.Repeat("Write-Host x\n", 1300) + "</powershell>", -1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, err := Generate(tt.family, withUserData(base(), tt.userData))
			if tt.wantSize == 0 {
				if err != nil {
					t.Fatalf("Generate: %v, want user data that fits", err)
				}
				if len(out) > MaxBytes {
					t.Fatalf("Generate returned %d bytes, over the limit of %d, without an error", len(out), MaxBytes)
				}
				return
			}
			var se *SizeError
			if !errors.As(err, &se) {
				t.Fatalf("Generate: %v (%d bytes returned), want a *SizeError", err, len(out))
			}
			if out != "" {
				t.Errorf("Generate returned %d bytes with the error, want none", len(out))
			}
			if se.Family != tt.family || se.UserSize != len(tt.userData) {
				t.Errorf("error for %s with %d bytes of spec.userData, want %s with %d", se.Family, se.UserSize, tt.family, len(tt.userData))
			}
			if tt.wantSize > 0 && se.Size != tt.wantSize {
				t.Errorf("refused user data of %d bytes, want %d", se.Size, tt.wantSize)
			}
			if se.Size <= MaxBytes {
				t.Errorf("refused user data of %d bytes, which is within the limit of %d", se.Size, MaxBytes)
			}
			msg := se.Error()
			for _, want := range []string{"spec.userData", strconv.Itoa(MaxBytes), strconv.Itoa(se.UserSize), "before base64", "S3 or SSM Parameter Store"} {
				if !strings.Contains(msg, want) {
					t.Errorf("message %q does not say %q", msg, want)
				}
			}
			if se.UserSize <= MaxBytes && tt.family != awsv1.AMIFamilyCustom {
				for _, want := range []string{strconv.Itoa(se.Size), string(tt.family)} {
					if !strings.Contains(msg, want) {
						t.Errorf("message %q does not give the merged size and family (%q)", msg, want)
					}
				}
			}
		})
	}
}
