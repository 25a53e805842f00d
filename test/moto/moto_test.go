package moto_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/aws-sdk-go-v2/service/ssm"
	ssmtypes "github.com/aws/aws-sdk-go-v2/service/ssm/types"

	"github.com/stevedore-autoscaler/stevedore/test/moto"
)

// TestServer starts a server, writes to it through the SDK, and checks that
// Reset forgets what was written.
func TestServer(t *testing.T) {
	s := moto.Start(t)
	cfg := s.Config("us-east-1")
	ctx := context.Background()
	params := ssm.NewFromConfig(cfg)
	name := "/stevedore/test/parameter"
	if _, err := params.PutParameter(ctx, &ssm.PutParameterInput{Name: aws.String(name), Value: aws.String("v1"), Type: ssmtypes.ParameterTypeString}); err != nil {
		t.Fatalf("PutParameter: %v\n%s", err, s.Output())
	}
	got, err := params.GetParameter(ctx, &ssm.GetParameterInput{Name: aws.String(name)})
	if err != nil {
		t.Fatalf("GetParameter: %v", err)
	}
	if v := aws.ToString(got.Parameter.Value); v != "v1" {
		t.Fatalf("GetParameter = %q, want v1", v)
	}
	vpcs, err := ec2.NewFromConfig(cfg).DescribeVpcs(ctx, &ec2.DescribeVpcsInput{})
	if err != nil {
		t.Fatalf("DescribeVpcs: %v", err)
	}
	if len(vpcs.Vpcs) == 0 {
		t.Fatal("DescribeVpcs: moto has no default VPC")
	}

	s.Reset(t)
	if _, err := params.GetParameter(ctx, &ssm.GetParameterInput{Name: aws.String(name)}); err == nil {
		t.Fatal("GetParameter after Reset found the parameter")
	}
}

// TestCheck checks that the machine has what Start needs: a missing moto
// is a failure that names it, not a skip.
func TestCheck(t *testing.T) {
	if err := moto.Check(); err != nil {
		t.Fatal(err)
	}
}

// TestCheckNamesWhatIsMissing runs Check with a PATH that has no python3,
// and with one whose python3 cannot import moto.
func TestCheckNamesWhatIsMissing(t *testing.T) {
	for _, tc := range []struct {
		name string
		// python3 is the script put on PATH as python3; "" for none.
		python3 string
		want    []string
	}{
		{name: "no python3", want: []string{"python3 is not on PATH", "apt-get install python3"}},
		{name: "no moto", python3: "#!/bin/sh\necho \"ModuleNotFoundError: No module named 'moto'\" >&2\nexit 1\n",
			want: []string{"cannot import the Python package moto", "pip install 'moto[server]'", "No module named 'moto'"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			if tc.python3 != "" {
				if err := os.WriteFile(filepath.Join(dir, moto.Python), []byte(tc.python3), 0o755); err != nil {
					t.Fatal(err)
				}
			}
			t.Setenv("PATH", dir)
			err := moto.Check()
			if !errors.Is(err, moto.ErrMissing) {
				t.Fatalf("Check() = %v, want an error wrapping ErrMissing", err)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("Check() = %q, want it to say %q", err, w)
				}
			}
		})
	}
}
