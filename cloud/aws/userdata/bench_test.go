package userdata

import (
	"fmt"
	"testing"

	awsv1 "github.com/stevedore-autoscaler/stevedore/api/aws/v1"
)

// BenchmarkGenerate generates user data for each family with a small and a
// 12,000-byte spec.userData: a shell script, a MIME document of two shell
// parts, and Bottlerocket TOML.
//
//	go test ./cloud/aws/userdata -run '^$' -bench Generate
func BenchmarkGenerate(b *testing.B) {
	for _, tc := range []struct {
		name   string
		family awsv1.AMIFamily
		user   func(n int) string
	}{
		{"AL2023/shell", awsv1.AMIFamilyAL2023, script},
		{"AL2023/MIME", awsv1.AMIFamilyAL2023, mimeScripts},
		{"AL2/shell", awsv1.AMIFamilyAL2, script},
		{"Bottlerocket/TOML", awsv1.AMIFamilyBottlerocket, sysctlTOML},
	} {
		for _, size := range []int{200, 12000} {
			opts := withUserData(base(), tc.user(size))
			b.Run(fmt.Sprintf("%s/%dB", tc.name, size), func(b *testing.B) {
				for b.Loop() {
					if _, err := Generate(tc.family, opts); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}

// mimeScripts is a MIME document of about n bytes: two shell script parts.
func mimeScripts(n int) string {
	const head = "MIME-Version: 1.0\nContent-Type: multipart/mixed; boundary=\"B\"\n\n"
	part := func(m int) string {
		return "--B\nContent-Type: text/x-shellscript\n\n" + script(max(m, 20)) + "\n"
	}
	body := (n - len(head) - 2*45 - 5) / 2
	return head + part(body) + part(body) + "--B--\n"
}
