package launch

import (
	"encoding/json"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	awsv1 "github.com/stevedore-autoscaler/stevedore/api/aws/v1"
)

// TestBuildTemplateNetworkPlacementCPU checks where each of the network,
// placement and CPU fields of an EC2NodeClass lands in the launch template,
// written as the JSON of the template data's fields concerned.
func TestBuildTemplateNetworkPlacementCPU(t *testing.T) {
	efa := []awsv1.NetworkInterface{
		{NetworkCardIndex: 1, DeviceIndex: 0, InterfaceType: awsv1.InterfaceTypeEFAOnly},
		{NetworkCardIndex: 0, DeviceIndex: 0, InterfaceType: awsv1.InterfaceTypeInterface},
		{NetworkCardIndex: 0, DeviceIndex: 1, InterfaceType: awsv1.InterfaceTypeEFAOnly},
	}
	conntrack := &awsv1.ConnectionTracking{TCPEstablishedTimeout: ptr(int32(3600)), UDPTimeout: ptr(int32(30))}
	for _, tc := range []struct {
		name      string
		spec      func(*awsv1.EC2NodeClassSpec)
		dns       []string
		placement Placement
		// want are the JSON of NetworkInterfaces, SecurityGroupIds,
		// CpuOptions and Placement.
		wantENIs, wantSGs, wantCPU, wantPlacement string
	}{
		{
			name: "nothing set: security groups on the template", spec: func(*awsv1.EC2NodeClassSpec) {},
			wantENIs: `null`, wantSGs: `["sg-1","sg-2"]`, wantCPU: `null`, wantPlacement: `null`,
		},
		{
			name: "ipPrefixCount on the implied primary interface", spec: func(s *awsv1.EC2NodeClassSpec) { s.IPPrefixCount = ptr(int32(2)) },
			wantENIs: `[{"DeviceIndex":0,"Groups":["sg-1","sg-2"],"Ipv4PrefixCount":2}]`, wantSGs: `null`, wantCPU: `null`, wantPlacement: `null`,
		},
		{
			name: "ipPrefixCount is an IPv6 prefix count on IPv6 clusters", spec: func(s *awsv1.EC2NodeClassSpec) { s.IPPrefixCount = ptr(int32(1)) },
			dns:      []string{"fd00::a"},
			wantENIs: `[{"DeviceIndex":0,"Groups":["sg-1","sg-2"],"Ipv6PrefixCount":1}]`, wantSGs: `null`, wantCPU: `null`, wantPlacement: `null`,
		},
		{
			name: "connectionTracking on the implied primary interface", spec: func(s *awsv1.EC2NodeClassSpec) { s.ConnectionTracking = conntrack },
			wantENIs: `[{"ConnectionTrackingSpecification":{"TcpEstablishedTimeout":3600,"UdpTimeout":30},"DeviceIndex":0,"Groups":["sg-1","sg-2"]}]`,
			wantSGs:  `null`, wantCPU: `null`, wantPlacement: `null`,
		},
		{
			name: "networkInterfaces in card and device order; efa-only ones without prefixes, public address or conntrack",
			spec: func(s *awsv1.EC2NodeClassSpec) {
				s.NetworkInterfaces = efa
				s.IPPrefixCount = ptr(int32(3))
				s.ConnectionTracking = conntrack
				s.AssociatePublicIPAddress = ptr(false)
			},
			wantENIs: `[{"AssociatePublicIpAddress":false,"ConnectionTrackingSpecification":{"TcpEstablishedTimeout":3600,"UdpTimeout":30},"DeviceIndex":0,"Groups":["sg-1","sg-2"],"InterfaceType":"interface","Ipv4PrefixCount":3,"NetworkCardIndex":0},` +
				`{"DeviceIndex":1,"Groups":["sg-1","sg-2"],"InterfaceType":"efa-only","NetworkCardIndex":0},` +
				`{"DeviceIndex":0,"Groups":["sg-1","sg-2"],"InterfaceType":"efa-only","NetworkCardIndex":1}]`,
			wantSGs: `null`, wantCPU: `null`, wantPlacement: `null`,
		},
		{
			name: "cpuOptions nestedVirtualization", spec: func(s *awsv1.EC2NodeClassSpec) {
				s.CPUOptions = &awsv1.CPUOptions{NestedVirtualization: ptr("enabled")}
			},
			wantENIs: `null`, wantSGs: `["sg-1","sg-2"]`, wantCPU: `{"NestedVirtualization":"enabled"}`, wantPlacement: `null`,
		},
		{
			name: "empty cpuOptions set nothing", spec: func(s *awsv1.EC2NodeClassSpec) { s.CPUOptions = &awsv1.CPUOptions{} },
			wantENIs: `null`, wantSGs: `["sg-1","sg-2"]`, wantCPU: `null`, wantPlacement: `null`,
		},
		{
			name: "placement group", spec: func(*awsv1.EC2NodeClassSpec) {}, placement: Placement{GroupID: "pg-1"},
			wantENIs: `null`, wantSGs: `["sg-1","sg-2"]`, wantCPU: `null`, wantPlacement: `{"GroupId":"pg-1"}`,
		},
		{
			name: "placement group partition", spec: func(*awsv1.EC2NodeClassSpec) {}, placement: Placement{GroupID: "pg-1", Partition: 3},
			wantENIs: `null`, wantSGs: `["sg-1","sg-2"]`, wantCPU: `null`, wantPlacement: `{"GroupId":"pg-1","PartitionNumber":3}`,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			nc := &awsv1.EC2NodeClass{
				ObjectMeta: metav1.ObjectMeta{Name: "default"},
				Spec:       awsv1.EC2NodeClassSpec{AMISelectorTerms: []awsv1.AMISelectorTerm{{Alias: "al2023@latest"}}},
				Status:     awsv1.EC2NodeClassStatus{InstanceProfile: "p", SecurityGroups: []awsv1.SecurityGroup{{ID: "sg-2"}, {ID: "sg-1"}}},
			}
			tc.spec(&nc.Spec)
			params := TemplateParams{ClusterName: "c", ClusterEndpoint: "https://e", CABundle: "Q0E=", ClusterCIDR: "10.0.0.0/16", ClusterDNS: tc.dns, NodeClass: nc, ImageID: "ami-1", Placement: tc.placement}
			tmpl, err := BuildTemplate(params)
			if err != nil {
				t.Fatal(err)
			}
			for _, f := range []struct {
				field string
				got   any
				want  string
			}{
				{"NetworkInterfaces", tmpl.Data.NetworkInterfaces, tc.wantENIs},
				{"SecurityGroupIds", tmpl.Data.SecurityGroupIds, tc.wantSGs},
				{"CpuOptions", tmpl.Data.CpuOptions, tc.wantCPU},
				{"Placement", tmpl.Data.Placement, tc.wantPlacement},
			} {
				if got := compactJSON(t, f.got); got != f.want {
					t.Errorf("%s = %s\nwant %s", f.field, got, f.want)
				}
			}
			// Every field is part of the template's content, so of its name.
			plain := nc.DeepCopy()
			plain.Spec = awsv1.EC2NodeClassSpec{AMISelectorTerms: plain.Spec.AMISelectorTerms}
			params.NodeClass, params.Placement = plain, Placement{}
			base, _ := BuildTemplate(params)
			if changed := tc.wantENIs != `null` || tc.wantCPU != `null` || tc.wantPlacement != `null`; changed == (base.Name == tmpl.Name) {
				t.Errorf("template name %s, without the fields %s: want them to differ: %v", tmpl.Name, base.Name, changed)
			}
		})
	}
}

// compactJSON marshals v, leaving out the SDK's unexported fields and the
// zero-valued enums that JSON of the request types carries.
func compactJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var generic any
	if err := json.Unmarshal(b, &generic); err != nil {
		t.Fatal(err)
	}
	b, _ = json.Marshal(dropEmpty(generic))
	return string(b)
}

func dropEmpty(v any) any {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			if e == nil || e == "" {
				delete(x, k)
				continue
			}
			x[k] = dropEmpty(e)
		}
	case []any:
		for i := range x {
			x[i] = dropEmpty(x[i])
		}
	}
	return v
}
