package moto_test

import (
	"context"
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
