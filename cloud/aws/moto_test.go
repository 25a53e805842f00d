package aws

import (
	"context"
	"errors"
	"net/http"
	"slices"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	smithyhttp "github.com/aws/smithy-go/transport/http"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"

	awsv1 "github.com/stevedore-autoscaler/stevedore/api/aws/v1"
	karpv1 "github.com/stevedore-autoscaler/stevedore/api/karpenter/v1"
	"github.com/stevedore-autoscaler/stevedore/api/wellknown"
	"github.com/stevedore-autoscaler/stevedore/cloud/aws/catalog"
	"github.com/stevedore-autoscaler/stevedore/cloud/aws/sdk"
	"github.com/stevedore-autoscaler/stevedore/cloud/aws/settings"
	"github.com/stevedore-autoscaler/stevedore/scheduling/packer"
	"github.com/stevedore-autoscaler/stevedore/test/moto"
)

// TestPricingFallbackAgainstMoto runs the provider's instance-type listing
// against moto, which serves EC2 but has no Price List API: every
// GetProducts fails, the on-demand prices are the embedded catalog's, and
// the failure is reported once over several refreshes.
func TestPricingFallbackAgainstMoto(t *testing.T) {
	srv := moto.Start(t)
	cfg := srv.Config("us-east-1")
	ctx := context.Background()
	client := ec2.NewFromConfig(cfg)
	vpc, err := client.CreateVpc(ctx, &ec2.CreateVpcInput{CidrBlock: aws.String("10.0.0.0/16")})
	if err != nil {
		t.Fatal(err)
	}
	var subnets []awsv1.Subnet
	for i, zone := range []string{"us-east-1a", "us-east-1b"} {
		out, err := client.CreateSubnet(ctx, &ec2.CreateSubnetInput{
			VpcId: vpc.Vpc.VpcId, AvailabilityZone: aws.String(zone), CidrBlock: aws.String([]string{"10.0.0.0/24", "10.0.1.0/24"}[i]),
		})
		if err != nil {
			t.Fatal(err)
		}
		subnets = append(subnets, awsv1.Subnet{ID: aws.ToString(out.Subnet.SubnetId), Zone: zone, ZoneID: aws.ToString(out.Subnet.AvailabilityZoneId)})
	}
	nc := &awsv1.EC2NodeClass{
		ObjectMeta: metav1.ObjectMeta{Name: "default", Generation: 1},
		Spec:       awsv1.EC2NodeClassSpec{AMISelectorTerms: []awsv1.AMISelectorTerm{{Alias: "al2023@latest"}}, Role: "node"},
		Status: awsv1.EC2NodeClassStatus{
			Subnets: subnets,
			AMIs: []awsv1.AMI{{ID: "ami-0123456789abcdef0", Requirements: []corev1.NodeSelectorRequirement{
				{Key: wellknown.LabelArch, Operator: corev1.NodeSelectorOpIn, Values: []string{wellknown.ArchAMD64}},
			}}},
			InstanceProfile: "node",
			Conditions:      []metav1.Condition{{Type: awsv1.ConditionTypeReady, Status: metav1.ConditionTrue, ObservedGeneration: 1, Reason: "Ready"}},
		},
	}
	clk := clocktesting.NewFakeClock(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))
	s := settings.Default()
	s.ClusterName = "moto"
	p, err := New(Options{
		Clients: sdk.NewFromConfig(cfg), Region: "us-east-1", Settings: s, Clock: clk,
		NodeClass: func(context.Context, string) (*awsv1.EC2NodeClass, error) { return nc.DeepCopy(), nil },
		Cluster:   ClusterInfo{Endpoint: "https://example.eks.amazonaws.com", CABundle: "Q0E=", ServiceCIDR: "10.100.0.0/16", DNS: []string{"10.100.0.10"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	var reports []error
	p.ReportPricingTo(func(err error) { reports = append(reports, err) })

	want, ok := catalog.Lookup("m5.large")
	if !ok || !want.Priced() {
		t.Fatal("the embedded catalog has no on-demand price for m5.large")
	}
	np := &karpv1.NodePool{Spec: karpv1.NodePoolSpec{Template: karpv1.NodeClaimTemplate{Spec: karpv1.NodeClaimTemplateSpec{NodeClassRef: &karpv1.NodeClassReference{Name: "default"}}}}}
	for refresh := range 3 {
		types, err := p.GetInstanceTypes(ctx, np)
		if err != nil {
			t.Fatalf("refresh %d: GetInstanceTypes: %v", refresh, err)
		}
		if !slices.ContainsFunc(types, func(it *packer.InstanceType) bool { return it.Name == "m5.large" }) {
			t.Fatalf("refresh %d: moto's instance types lack m5.large (%d types)", refresh, len(types))
		}
		if got := onDemandPriceOf(types, "m5.large"); got != want.OnDemandPricePerHour {
			t.Errorf("refresh %d: m5.large on-demand %v, want the catalog's %v", refresh, got, want.OnDemandPricePerHour)
		}
		clk.Step(DefaultCacheTTL)
	}
	if len(reports) != 1 || reports[0] == nil {
		t.Fatalf("pricing reports %v, want one failure", reports)
	}
	var re *smithyhttp.ResponseError
	// moto answers 404 ("Not yet implemented") or, with filters, 500.
	if !errors.As(reports[0], &re) || (re.HTTPStatusCode() != http.StatusNotFound && re.HTTPStatusCode() != http.StatusInternalServerError) {
		t.Errorf("the failure reported is %v; want moto's answer to an API it does not implement (HTTP 404 or 500)", reports[0])
	}
}
