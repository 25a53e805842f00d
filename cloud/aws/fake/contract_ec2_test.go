package fake_test

import (
	"context"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
)

// contractTypes are instance types of several kinds: general purpose,
// Graviton, burstable, with instance storage, with GPUs, bare metal.
var contractTypes = []string{"m5.large", "c6g.xlarge", "t3.micro", "m5d.large", "g5.xlarge", "inf2.xlarge", "c5.metal"}

type typeView struct {
	Name       string
	VCPUs      int32
	MemoryMiB  int64
	Archs      []string
	Hypervisor string
	BareMetal  bool
	// ENIPods is the ENI-limited pod count, ENIs × (IPv4 per ENI − 1) + 2,
	// what the provider derives from the two with no reserved ENIs; the
	// raw layout, which matters with reserved ENIs, is compared by the
	// case about it.
	ENIPods    int32
	ENIs       int32 `json:",omitempty"`
	IPv4PerENI int32 `json:",omitempty"`
	GPUs       []string
	StorageGB  int64
}

func typeViews(types []ec2types.InstanceTypeInfo) []typeView { return typeViewsENI(types, false) }

func typeViewsENI(types []ec2types.InstanceTypeInfo, layout bool) []typeView {
	var out []typeView
	for _, it := range types {
		v := typeView{Name: string(it.InstanceType), Hypervisor: string(it.Hypervisor), BareMetal: aws.ToBool(it.BareMetal)}
		if it.VCpuInfo != nil {
			v.VCPUs = aws.ToInt32(it.VCpuInfo.DefaultVCpus)
		}
		if it.MemoryInfo != nil {
			v.MemoryMiB = aws.ToInt64(it.MemoryInfo.SizeInMiB)
		}
		if it.ProcessorInfo != nil {
			for _, a := range it.ProcessorInfo.SupportedArchitectures {
				v.Archs = append(v.Archs, string(a))
			}
			sort.Strings(v.Archs)
		}
		if it.NetworkInfo != nil {
			enis, ips := aws.ToInt32(it.NetworkInfo.MaximumNetworkInterfaces), aws.ToInt32(it.NetworkInfo.Ipv4AddressesPerInterface)
			v.ENIPods = enis*(ips-1) + 2
			if layout {
				v.ENIs, v.IPv4PerENI = enis, ips
			}
		}
		if it.GpuInfo != nil {
			for _, g := range it.GpuInfo.Gpus {
				// The provider lower-cases GPU names and makers for its
				// labels (the fake answers "a10g", AWS "A10G").
				v.GPUs = append(v.GPUs, strings.ToLower(strconv.Itoa(int(aws.ToInt32(g.Count)))+" "+aws.ToString(g.Manufacturer)+" "+aws.ToString(g.Name)))
			}
		}
		if it.InstanceStorageInfo != nil {
			v.StorageGB = aws.ToInt64(it.InstanceStorageInfo.TotalSizeInGB)
		}
		out = append(out, v)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

func typeValues(names []string) []ec2types.InstanceType {
	out := make([]ec2types.InstanceType, len(names))
	for i, n := range names {
		out[i] = ec2types.InstanceType(n)
	}
	return out
}

// inContractZones keeps the zones both sides have: moto serves six zones
// in us-east-1, the fake the three it is given.
func inContractZones(zones []string) []string {
	var out []string
	for _, z := range zones {
		if slices.Contains(contractZones, z) {
			out = append(out, z)
		}
	}
	sort.Strings(out)
	return out
}

func typeCases() []contractCase {
	return []contractCase{
		{
			op: "EC2.DescribeInstanceTypes", name: "by name",
			call: func(ctx context.Context, _ *testing.T, w world) (any, error) {
				out, err := w.clients().EC2.DescribeInstanceTypes(ctx, &ec2.DescribeInstanceTypesInput{InstanceTypes: typeValues(contractTypes)})
				if err != nil {
					return nil, err
				}
				return typeViews(out.InstanceTypes), nil
			},
		},
		{
			op: "EC2.DescribeInstanceTypes", name: "ENI layout",
			call: func(ctx context.Context, _ *testing.T, w world) (any, error) {
				out, err := w.clients().EC2.DescribeInstanceTypes(ctx, &ec2.DescribeInstanceTypesInput{InstanceTypes: typeValues(contractTypes)})
				if err != nil {
					return nil, err
				}
				return typeViewsENI(out.InstanceTypes, true), nil
			},
		},
		{
			op: "EC2.DescribeInstanceTypes", name: "the provider's filters, pages of 5", differs: motoNoPages,
			call: func(ctx context.Context, _ *testing.T, w world) (any, error) {
				pg := ec2.NewDescribeInstanceTypesPaginator(w.clients().EC2, &ec2.DescribeInstanceTypesInput{
					InstanceTypes: typeValues(contractTypes), MaxResults: aws.Int32(5),
					Filters: []ec2types.Filter{
						{Name: aws.String("supported-virtualization-type"), Values: []string{"hvm"}},
						{Name: aws.String("processor-info.supported-architecture"), Values: []string{"x86_64", "arm64"}},
					},
				})
				return collectPages(ctx, pg, func(out *ec2.DescribeInstanceTypesOutput) (items []string) {
					for _, it := range out.InstanceTypes {
						items = append(items, string(it.InstanceType))
					}
					return items
				})
			},
		},
		{
			op: "EC2.DescribeInstanceTypes", name: "unknown type",
			call: func(ctx context.Context, _ *testing.T, w world) (any, error) {
				return w.clients().EC2.DescribeInstanceTypes(ctx, &ec2.DescribeInstanceTypesInput{InstanceTypes: []ec2types.InstanceType{"m5.huge"}})
			},
		},
		{
			op: "EC2.DescribeInstanceTypeOfferings", name: "zones of a type",
			call: func(ctx context.Context, _ *testing.T, w world) (any, error) {
				out, err := w.clients().EC2.DescribeInstanceTypeOfferings(ctx, &ec2.DescribeInstanceTypeOfferingsInput{
					LocationType: ec2types.LocationTypeAvailabilityZone,
					Filters:      []ec2types.Filter{{Name: aws.String("instance-type"), Values: []string{"m5.large"}}},
				})
				if err != nil {
					return nil, err
				}
				var zones []string
				for _, o := range out.InstanceTypeOfferings {
					zones = append(zones, aws.ToString(o.Location))
				}
				return inContractZones(zones), nil
			},
		},
		{
			op: "EC2.DescribeInstanceTypeOfferings", name: "pages of 5", differs: motoNoPages,
			call: func(ctx context.Context, _ *testing.T, w world) (any, error) {
				pg := ec2.NewDescribeInstanceTypeOfferingsPaginator(w.clients().EC2, &ec2.DescribeInstanceTypeOfferingsInput{
					LocationType: ec2types.LocationTypeAvailabilityZone, MaxResults: aws.Int32(5),
					Filters: []ec2types.Filter{
						{Name: aws.String("instance-type"), Values: []string{"m5.large", "c5.large", "m5.xlarge", "r5.large", "t3.micro", "c6g.large", "m6g.large"}},
						{Name: aws.String("location"), Values: []string{"us-east-1a"}},
					},
				})
				return collectPages(ctx, pg, func(out *ec2.DescribeInstanceTypeOfferingsOutput) (items []string) {
					for _, o := range out.InstanceTypeOfferings {
						items = append(items, string(o.InstanceType)+"@"+aws.ToString(o.Location))
					}
					return items
				})
			},
		},
		{
			op: "EC2.DescribeSpotPriceHistory", name: "latest Linux prices of a type",
			call: func(ctx context.Context, _ *testing.T, w world) (any, error) {
				out, err := w.clients().EC2.DescribeSpotPriceHistory(ctx, &ec2.DescribeSpotPriceHistoryInput{
					InstanceTypes:       []ec2types.InstanceType{"m5.large"},
					ProductDescriptions: []string{"Linux/UNIX", "Linux/UNIX (Amazon VPC)"},
				})
				if err != nil {
					return nil, err
				}
				// The prices themselves are the market's; the provider
				// needs one parseable positive price per zone.
				priced := map[string]bool{}
				var zones []string
				for _, sp := range out.SpotPriceHistory {
					z := aws.ToString(sp.AvailabilityZone)
					v, err := strconv.ParseFloat(aws.ToString(sp.SpotPrice), 64)
					if err == nil && v > 0 && sp.InstanceType == "m5.large" && sp.Timestamp != nil && !priced[z] {
						priced[z] = true
						zones = append(zones, z)
					}
				}
				return inContractZones(zones), nil
			},
		},
		{
			op: "EC2.DescribeSpotPriceHistory", name: "pages of 5, one zone", differs: motoSpotPages,
			call: func(ctx context.Context, _ *testing.T, w world) (any, error) {
				pg := ec2.NewDescribeSpotPriceHistoryPaginator(w.clients().EC2, &ec2.DescribeSpotPriceHistoryInput{
					InstanceTypes: typeValues(contractTypes), AvailabilityZone: aws.String("us-east-1a"),
					ProductDescriptions: []string{"Linux/UNIX (Amazon VPC)"}, MaxResults: aws.Int32(5),
				})
				return collectPages(ctx, pg, func(out *ec2.DescribeSpotPriceHistoryOutput) (items []string) {
					for _, sp := range out.SpotPriceHistory {
						items = append(items, string(sp.InstanceType)+"@"+aws.ToString(sp.AvailabilityZone)+" "+string(sp.ProductDescription))
					}
					return items
				})
			},
		},
		{
			op: "EC2.DescribeCapacityReservations", name: "by ID", motoLacks: motoNoReservations, fakeSays: "error InvalidCapacityReservationId.NotFound",
			call: func(ctx context.Context, _ *testing.T, w world) (any, error) {
				return w.clients().EC2.DescribeCapacityReservations(ctx, &ec2.DescribeCapacityReservationsInput{
					CapacityReservationIds: []string{"cr-0123456789abcdef0"},
				})
			},
		},
	}
}

// Launch template and fleet inputs the cases share.
const (
	templateName = "contract-template"
	templateTag  = "karpenter.k8s.aws/cluster"
)

func createTemplate(ctx context.Context, w world, name string) (*ec2.CreateLaunchTemplateOutput, error) {
	return w.clients().EC2.CreateLaunchTemplate(ctx, &ec2.CreateLaunchTemplateInput{
		LaunchTemplateName: aws.String(name),
		LaunchTemplateData: &ec2types.RequestLaunchTemplateData{
			ImageId:          aws.String(w.id("ami-x86")),
			SecurityGroupIds: []string{w.id("sg-nodes")},
			UserData:         aws.String("IyEvYmluL2Jhc2gK"),
			MetadataOptions: &ec2types.LaunchTemplateInstanceMetadataOptionsRequest{
				HttpTokens: ec2types.LaunchTemplateHttpTokensStateRequired, HttpPutResponseHopLimit: aws.Int32(1),
			},
		},
		TagSpecifications: []ec2types.TagSpecification{{
			ResourceType: ec2types.ResourceTypeLaunchTemplate,
			Tags:         []ec2types.Tag{{Key: aws.String(templateTag), Value: aws.String(clusterName)}},
		}},
	})
}

// seedLaunch seeds the network and images and a launch template.
func seedLaunch(t *testing.T, w world) {
	t.Helper()
	seedNetwork(t, w)
	seedImages(t, w)
	if _, err := createTemplate(context.Background(), w, templateName); err != nil {
		t.Fatalf("%s: CreateLaunchTemplate: %v", w.name(), err)
	}
}

func fleetInput(w world, template, capacityType string, n int32, overrides ...[2]string) *ec2.CreateFleetInput {
	var os []ec2types.FleetLaunchTemplateOverridesRequest
	for _, o := range overrides {
		os = append(os, ec2types.FleetLaunchTemplateOverridesRequest{InstanceType: ec2types.InstanceType(o[0]), SubnetId: aws.String(w.id(o[1]))})
	}
	return &ec2.CreateFleetInput{
		Type: ec2types.FleetTypeInstant,
		LaunchTemplateConfigs: []ec2types.FleetLaunchTemplateConfigRequest{{
			LaunchTemplateSpecification: &ec2types.FleetLaunchTemplateSpecificationRequest{LaunchTemplateName: aws.String(template), Version: aws.String("$Latest")},
			Overrides:                   os,
		}},
		TargetCapacitySpecification: &ec2types.TargetCapacitySpecificationRequest{
			TotalTargetCapacity: aws.Int32(n), DefaultTargetCapacityType: ec2types.DefaultTargetCapacityType(capacityType),
		},
		OnDemandOptions: &ec2types.OnDemandOptionsRequest{AllocationStrategy: ec2types.FleetOnDemandAllocationStrategyLowestPrice},
		SpotOptions:     &ec2types.SpotOptionsRequest{AllocationStrategy: ec2types.SpotAllocationStrategyPriceCapacityOptimized},
		TagSpecifications: []ec2types.TagSpecification{{
			ResourceType: ec2types.ResourceTypeInstance,
			Tags:         []ec2types.Tag{{Key: aws.String(clusterTag), Value: aws.String(clusterName)}, {Key: aws.String("karpenter.sh/nodepool"), Value: aws.String("default")}},
		}},
	}
}

type fleetView struct {
	Instances []string
	Errors    []string
}

func fleetAnswer(w world, out *ec2.CreateFleetOutput) fleetView {
	var v fleetView
	for _, fi := range out.Instances {
		subnet := ""
		if o := fi.LaunchTemplateAndOverrides; o != nil && o.Overrides != nil {
			subnet = w.sym(aws.ToString(o.Overrides.SubnetId))
		}
		v.Instances = append(v.Instances, strings.Join([]string{string(fi.InstanceType), string(fi.Lifecycle), subnet, strconv.Itoa(len(fi.InstanceIds)) + " instances"}, " "))
	}
	for _, e := range out.Errors {
		v.Errors = append(v.Errors, aws.ToString(e.ErrorCode))
	}
	sort.Strings(v.Instances)
	sort.Strings(v.Errors)
	return v
}

// launchInstances launches n on-demand m5.large instances into subnet-a
// and names them i0, i1, ... in launch order.
func launchInstances(t *testing.T, w world, n int) {
	t.Helper()
	out, err := w.clients().EC2.CreateFleet(context.Background(), fleetInput(w, templateName, "on-demand", int32(n), [2]string{"m5.large", "subnet-a"}))
	if err != nil {
		t.Fatalf("%s: CreateFleet: %v", w.name(), err)
	}
	var launched []string
	for _, fi := range out.Instances {
		launched = append(launched, fi.InstanceIds...)
	}
	if len(launched) != n {
		t.Fatalf("%s: CreateFleet launched %d instances, want %d (errors %+v)", w.name(), len(launched), n, out.Errors)
	}
	for i, id := range launched {
		w.set("i"+strconv.Itoa(i), id)
	}
}

func launchCases() []contractCase {
	return []contractCase{
		{
			op: "EC2.CreateLaunchTemplate", name: "new",
			seed: func(t *testing.T, w world) { seedNetwork(t, w); seedImages(t, w) },
			call: func(ctx context.Context, _ *testing.T, w world) (any, error) {
				out, err := createTemplate(ctx, w, templateName)
				if err != nil {
					return nil, err
				}
				lt := out.LaunchTemplate
				return []string{aws.ToString(lt.LaunchTemplateName), strconv.FormatInt(aws.ToInt64(lt.LatestVersionNumber), 10), strconv.FormatInt(aws.ToInt64(lt.DefaultVersionNumber), 10)}, nil
			},
		},
		{
			op: "EC2.CreateLaunchTemplate", name: "name taken", seed: seedLaunch,
			call: func(ctx context.Context, _ *testing.T, w world) (any, error) {
				return createTemplate(ctx, w, templateName)
			},
		},
		{
			op: "EC2.DescribeLaunchTemplates", name: "by name", seed: seedLaunch,
			call: func(ctx context.Context, _ *testing.T, w world) (any, error) {
				out, err := w.clients().EC2.DescribeLaunchTemplates(ctx, &ec2.DescribeLaunchTemplatesInput{LaunchTemplateNames: []string{templateName}})
				if err != nil {
					return nil, err
				}
				var names []string
				for _, lt := range out.LaunchTemplates {
					names = append(names, aws.ToString(lt.LaunchTemplateName)+" "+answer(ec2TagMap(lt.Tags), nil))
				}
				return names, nil
			},
		},
		{
			op: "EC2.DescribeLaunchTemplates", name: "unknown name", seed: seedLaunch,
			call: func(ctx context.Context, _ *testing.T, w world) (any, error) {
				return w.clients().EC2.DescribeLaunchTemplates(ctx, &ec2.DescribeLaunchTemplatesInput{LaunchTemplateNames: []string{"contract-none"}})
			},
		},
		{
			op: "EC2.DescribeLaunchTemplates", name: "by tag, pages of 2", differs: motoTruncates,
			seed: func(t *testing.T, w world) {
				seedLaunch(t, w)
				for _, n := range []string{"contract-2", "contract-3"} {
					if _, err := createTemplate(context.Background(), w, n); err != nil {
						t.Fatal(err)
					}
				}
			},
			call: func(ctx context.Context, _ *testing.T, w world) (any, error) {
				pg := ec2.NewDescribeLaunchTemplatesPaginator(w.clients().EC2, &ec2.DescribeLaunchTemplatesInput{
					Filters: []ec2types.Filter{tagFilter(templateTag, clusterName)}, MaxResults: aws.Int32(2),
				})
				return collectPages(ctx, pg, func(out *ec2.DescribeLaunchTemplatesOutput) (items []string) {
					for _, lt := range out.LaunchTemplates {
						items = append(items, aws.ToString(lt.LaunchTemplateName))
					}
					return items
				})
			},
		},
		{
			op: "EC2.DeleteLaunchTemplate", name: "by name", seed: seedLaunch,
			call: func(ctx context.Context, _ *testing.T, w world) (any, error) {
				out, err := w.clients().EC2.DeleteLaunchTemplate(ctx, &ec2.DeleteLaunchTemplateInput{LaunchTemplateName: aws.String(templateName)})
				if err != nil {
					return nil, err
				}
				_, err = w.clients().EC2.DescribeLaunchTemplates(ctx, &ec2.DescribeLaunchTemplatesInput{LaunchTemplateNames: []string{templateName}})
				return []string{aws.ToString(out.LaunchTemplate.LaunchTemplateName), "then describing it: " + answer(nil, err)}, nil
			},
		},
		{
			op: "EC2.DeleteLaunchTemplate", name: "unknown name", seed: seedLaunch, differs: motoDeleteMissingTemplate,
			call: func(ctx context.Context, _ *testing.T, w world) (any, error) {
				return w.clients().EC2.DeleteLaunchTemplate(ctx, &ec2.DeleteLaunchTemplateInput{LaunchTemplateName: aws.String("contract-none")})
			},
		},
		{
			op: "EC2.CreateFleet", name: "on-demand, one override", seed: seedLaunch,
			call: func(ctx context.Context, _ *testing.T, w world) (any, error) {
				out, err := w.clients().EC2.CreateFleet(ctx, fleetInput(w, templateName, "on-demand", 1, [2]string{"m5.large", "subnet-b"}))
				if err != nil {
					return nil, err
				}
				return fleetAnswer(w, out), nil
			},
		},
		{
			op: "EC2.CreateFleet", name: "spot", seed: seedLaunch,
			call: func(ctx context.Context, _ *testing.T, w world) (any, error) {
				out, err := w.clients().EC2.CreateFleet(ctx, fleetInput(w, templateName, "spot", 1, [2]string{"m5.large", "subnet-c"}))
				if err != nil {
					return nil, err
				}
				return fleetAnswer(w, out), nil
			},
		},
		{
			op: "EC2.CreateFleet", name: "unknown launch template", seed: seedLaunch, differs: motoFleetErrors,
			call: func(ctx context.Context, _ *testing.T, w world) (any, error) {
				out, err := w.clients().EC2.CreateFleet(ctx, fleetInput(w, "contract-none", "on-demand", 1, [2]string{"m5.large", "subnet-a"}))
				if err != nil {
					return nil, err
				}
				return fleetAnswer(w, out), nil
			},
		},
		{
			op: "EC2.RunInstances", name: "dry run", seed: seedLaunch,
			call: func(ctx context.Context, _ *testing.T, w world) (any, error) {
				return w.clients().EC2.RunInstances(ctx, &ec2.RunInstancesInput{
					DryRun: aws.Bool(true), MinCount: aws.Int32(1), MaxCount: aws.Int32(1),
					LaunchTemplate: &ec2types.LaunchTemplateSpecification{LaunchTemplateName: aws.String(templateName)},
					InstanceType:   ec2types.InstanceTypeM5Large, SubnetId: aws.String(w.id("subnet-a")),
				})
			},
		},
	}
}

type instanceView struct {
	ID, Type, State, Zone, Subnet, Image string
	Spot                                 bool
	Launched                             bool
	// SecurityGroups is only compared by the case about it.
	SecurityGroups []string `json:",omitempty"`
	Tags           map[string]string
}

func describeInstances(ctx context.Context, w world, in *ec2.DescribeInstancesInput) (any, error) {
	return describeInstancesGroups(ctx, w, in, false)
}

func describeInstancesGroups(ctx context.Context, w world, in *ec2.DescribeInstancesInput, withGroups bool) (any, error) {
	out, err := w.clients().EC2.DescribeInstances(ctx, in)
	if err != nil {
		return nil, err
	}
	var views []instanceView
	for _, r := range out.Reservations {
		for _, inst := range r.Instances {
			v := instanceView{
				ID: w.sym(aws.ToString(inst.InstanceId)), Type: string(inst.InstanceType),
				Subnet: w.sym(aws.ToString(inst.SubnetId)), Image: w.sym(aws.ToString(inst.ImageId)),
				Spot: inst.InstanceLifecycle == ec2types.InstanceLifecycleTypeSpot, Launched: inst.LaunchTime != nil,
				Tags: ec2TagMap(inst.Tags),
			}
			if inst.State != nil {
				v.State = string(inst.State.Name)
			}
			if inst.Placement != nil {
				v.Zone = aws.ToString(inst.Placement.AvailabilityZone)
			}
			for _, g := range inst.SecurityGroups {
				if !withGroups {
					break
				}
				v.SecurityGroups = append(v.SecurityGroups, w.sym(aws.ToString(g.GroupId)))
			}
			// Tags the fleet adds itself are AWS's own (aws:ec2:fleet-id
			// and the like); the provider reads its own.
			for k := range v.Tags {
				if strings.HasPrefix(k, "aws:") {
					delete(v.Tags, k)
				}
			}
			views = append(views, v)
		}
	}
	sort.Slice(views, func(i, j int) bool { return views[i].ID < views[j].ID })
	return views, nil
}

func seedInstances(n int) func(t *testing.T, w world) {
	return func(t *testing.T, w world) {
		seedLaunch(t, w)
		launchInstances(t, w, n)
	}
}

func instanceCases() []contractCase {
	return []contractCase{
		{
			op: "EC2.DescribeInstances", name: "by tag and state", seed: seedInstances(2),
			call: func(ctx context.Context, _ *testing.T, w world) (any, error) {
				return describeInstances(ctx, w, &ec2.DescribeInstancesInput{Filters: []ec2types.Filter{
					tagFilter(clusterTag, clusterName),
					{Name: aws.String("instance-state-name"), Values: []string{"pending", "running", "stopping", "stopped", "shutting-down"}},
				}})
			},
		},
		{
			op: "EC2.DescribeInstances", name: "security groups from the launch template", seed: seedInstances(1), differs: motoFleetGroups,
			call: func(ctx context.Context, _ *testing.T, w world) (any, error) {
				return describeInstancesGroups(ctx, w, &ec2.DescribeInstancesInput{InstanceIds: []string{w.id("i0")}}, true)
			},
		},
		{
			op: "EC2.DescribeInstances", name: "by ID", seed: seedInstances(2),
			call: func(ctx context.Context, _ *testing.T, w world) (any, error) {
				return describeInstances(ctx, w, &ec2.DescribeInstancesInput{InstanceIds: []string{w.id("i1")}})
			},
		},
		{
			op: "EC2.DescribeInstances", name: "unknown ID", seed: seedInstances(1),
			call: func(ctx context.Context, _ *testing.T, w world) (any, error) {
				return describeInstances(ctx, w, &ec2.DescribeInstancesInput{InstanceIds: []string{"i-0123456789abcdef0"}})
			},
		},
		{
			op: "EC2.DescribeInstances", name: "malformed ID", seed: seedInstances(1), differs: motoMalformedID,
			call: func(ctx context.Context, _ *testing.T, w world) (any, error) {
				return describeInstances(ctx, w, &ec2.DescribeInstancesInput{InstanceIds: []string{"not-an-instance"}})
			},
		},
		{
			op: "EC2.DescribeInstances", name: "pages of 5", seed: seedInstances(7), differs: motoNoPages,
			call: func(ctx context.Context, _ *testing.T, w world) (any, error) {
				pg := ec2.NewDescribeInstancesPaginator(w.clients().EC2, &ec2.DescribeInstancesInput{
					Filters: []ec2types.Filter{tagFilter(clusterTag, clusterName)}, MaxResults: aws.Int32(5),
				})
				return collectPages(ctx, pg, func(out *ec2.DescribeInstancesOutput) (items []string) {
					for _, r := range out.Reservations {
						for _, inst := range r.Instances {
							items = append(items, w.sym(aws.ToString(inst.InstanceId)))
						}
					}
					return items
				})
			},
		},
		{
			op: "EC2.TerminateInstances", name: "running", seed: seedInstances(2),
			call: func(ctx context.Context, _ *testing.T, w world) (any, error) {
				out, err := w.clients().EC2.TerminateInstances(ctx, &ec2.TerminateInstancesInput{InstanceIds: []string{w.id("i0")}})
				if err != nil {
					return nil, err
				}
				var views []string
				for _, c := range out.TerminatingInstances {
					views = append(views, w.sym(aws.ToString(c.InstanceId))+" "+string(c.PreviousState.Name)+" -> "+string(c.CurrentState.Name))
				}
				return views, nil
			},
		},
		{
			op: "EC2.TerminateInstances", name: "twice, then described", seed: seedInstances(1), differs: motoTerminateAgain,
			call: func(ctx context.Context, _ *testing.T, w world) (any, error) {
				var views []string
				for range 2 {
					out, err := w.clients().EC2.TerminateInstances(ctx, &ec2.TerminateInstancesInput{InstanceIds: []string{w.id("i0")}})
					if err != nil {
						return nil, err
					}
					for _, c := range out.TerminatingInstances {
						views = append(views, string(c.PreviousState.Name)+" -> "+string(c.CurrentState.Name))
					}
				}
				// A terminated instance stays visible for a while, as
				// terminated; the provider and garbage collection read it so.
				described, err := describeInstances(ctx, w, &ec2.DescribeInstancesInput{InstanceIds: []string{w.id("i0")}})
				if err != nil {
					return nil, err
				}
				for _, v := range described.([]instanceView) {
					views = append(views, v.ID+" "+v.State)
				}
				return views, nil
			},
		},
		{
			op: "EC2.TerminateInstances", name: "unknown ID", seed: seedInstances(1),
			call: func(ctx context.Context, _ *testing.T, w world) (any, error) {
				return w.clients().EC2.TerminateInstances(ctx, &ec2.TerminateInstancesInput{InstanceIds: []string{"i-0123456789abcdef0"}})
			},
		},
		{
			op: "EC2.DescribeInstanceStatus", name: "all instances", seed: seedInstances(2),
			call: func(ctx context.Context, _ *testing.T, w world) (any, error) {
				out, err := w.clients().EC2.DescribeInstanceStatus(ctx, &ec2.DescribeInstanceStatusInput{IncludeAllInstances: aws.Bool(true)})
				if err != nil {
					return nil, err
				}
				var views []string
				for _, s := range out.InstanceStatuses {
					v := w.sym(aws.ToString(s.InstanceId)) + " " + aws.ToString(s.AvailabilityZone)
					if s.InstanceState != nil {
						v += " " + string(s.InstanceState.Name)
					}
					views = append(views, v)
				}
				sort.Strings(views)
				return views, nil
			},
		},
		{
			op: "EC2.DescribeInstanceStatus", name: "pages of 5", seed: seedInstances(7),
			call: func(ctx context.Context, _ *testing.T, w world) (any, error) {
				pg := ec2.NewDescribeInstanceStatusPaginator(w.clients().EC2, &ec2.DescribeInstanceStatusInput{
					IncludeAllInstances: aws.Bool(true), MaxResults: aws.Int32(5),
				})
				return collectPages(ctx, pg, func(out *ec2.DescribeInstanceStatusOutput) (items []string) {
					for _, st := range out.InstanceStatuses {
						items = append(items, w.sym(aws.ToString(st.InstanceId)))
					}
					return items
				})
			},
		},
		{
			op: "EC2.CreateTags", name: "on an instance", seed: seedInstances(1),
			call: func(ctx context.Context, _ *testing.T, w world) (any, error) {
				_, err := w.clients().EC2.CreateTags(ctx, &ec2.CreateTagsInput{
					Resources: []string{w.id("i0")},
					Tags:      []ec2types.Tag{{Key: aws.String("karpenter.sh/nodeclaim"), Value: aws.String("default-abcde")}, {Key: aws.String("Name"), Value: aws.String("ip-10-0-0-4.ec2.internal")}},
				})
				if err != nil {
					return nil, err
				}
				return describeInstances(ctx, w, &ec2.DescribeInstancesInput{InstanceIds: []string{w.id("i0")}})
			},
		},
		{
			op: "EC2.CreateTags", name: "unknown instance", seed: seedInstances(1), differs: motoTagsUnknown,
			call: func(ctx context.Context, _ *testing.T, w world) (any, error) {
				return w.clients().EC2.CreateTags(ctx, &ec2.CreateTagsInput{
					Resources: []string{"i-0123456789abcdef0"},
					Tags:      []ec2types.Tag{{Key: aws.String("Name"), Value: aws.String("x")}},
				})
			},
		},
	}
}
