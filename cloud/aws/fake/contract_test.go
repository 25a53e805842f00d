package fake_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"reflect"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"github.com/aws/aws-sdk-go-v2/service/ssm"
	"github.com/aws/smithy-go"
	smithyhttp "github.com/aws/smithy-go/transport/http"

	"github.com/stevedore-autoscaler/stevedore/cloud/aws/sdk"
	"github.com/stevedore-autoscaler/stevedore/test/moto"
)

// contractCase is one call of the contract test: the same starting state
// in the fake and in moto, the same input to both, and the parts of the
// answers the provider reads compared.
type contractCase struct {
	// op is the sdk interface method called (Service.Method).
	op   string
	name string
	seed func(t *testing.T, w world)
	// call makes the call against w and returns what the provider reads
	// of the answer, identifiers replaced by their symbols.
	call func(ctx context.Context, t *testing.T, w world) (any, error)
	// differs, when set, is the verdict that moto answers differently, and
	// why that is accepted: moto does not answer as AWS documents, or the
	// provider treats both answers alike. The case then checks that the
	// two sides still differ, so that a verdict that stops holding is
	// noticed.
	differs string
	// motoLacks, when set, is the verdict that moto does not implement the
	// operation (or what the case seeds), and which gap that is: the moto
	// side is not seeded, and its call must fail with moto's "not
	// implemented" answer, so that moto gaining it is noticed.
	motoLacks string
	// fakeSays is, for a case moto lacks, a part of the fake's answer
	// that the API reference documents (an error code, a field).
	fakeSays string
}

// notImplemented reports whether err is moto's answer to an operation it
// does not implement: HTTP 404 ("Not yet implemented") for the REST and
// JSON services, HTTP 500 (a Python NotImplementedError) for EC2.
func notImplemented(err error) bool {
	var re *smithyhttp.ResponseError
	if !errors.As(err, &re) {
		return false
	}
	code := re.HTTPStatusCode()
	return code == http.StatusNotFound || code == http.StatusInternalServerError
}

// errorCode is the API error code of err, or its text when it has none.
func errorCode(err error) string {
	var ae smithy.APIError
	if errors.As(err, &ae) {
		return ae.ErrorCode()
	}
	return "no API error: " + err.Error()
}

// answer is what one side said: the projection of its output, or its
// error code.
func answer(v any, err error) string {
	if err != nil {
		return "error " + errorCode(err)
	}
	b, jerr := json.Marshal(v)
	if jerr != nil {
		return "unmarshallable: " + jerr.Error()
	}
	return string(b)
}

// TestContractMoto runs every case against the fake and against moto and
// compares their answers; see docs/aws.md for the verdicts.
func TestContractMoto(t *testing.T) {
	srv := moto.Start(t)
	ctx := context.Background()
	covered := map[string]bool{}
	for _, tc := range contractCases() {
		covered[tc.op] = true
		t.Run(tc.op+"/"+tc.name, func(t *testing.T) {
			srv.Reset(t)
			sides := []world{newFakeWorld(), newMotoWorld(srv)}
			got := make([]string, len(sides))
			for i, w := range sides {
				if tc.seed != nil && (tc.motoLacks == "" || w.name() != "moto") {
					tc.seed(t, w)
				}
				v, err := tc.call(ctx, t, w)
				if tc.motoLacks != "" && w.name() == "moto" {
					if !notImplemented(err) {
						t.Fatalf("moto was recorded as lacking this (%s), but it answers %s", tc.motoLacks, answer(v, err))
					}
					if tc.fakeSays == "" || !strings.Contains(got[0], tc.fakeSays) {
						t.Errorf("the fake answers %s, want an answer with %q", got[0], tc.fakeSays)
					}
					t.Logf("moto lacks this, as recorded (%s); the fake answers %s", tc.motoLacks, got[0])
					return
				}
				got[i] = answer(v, err)
			}
			fakeSaid, motoSaid := got[0], got[1]
			switch {
			case tc.differs == "" && fakeSaid != motoSaid:
				t.Errorf("the fake and moto differ:\nfake: %s\nmoto: %s", fakeSaid, motoSaid)
			case tc.differs != "" && fakeSaid == motoSaid:
				t.Errorf("moto now answers as the fake does (%s); the verdict %q no longer holds", fakeSaid, tc.differs)
			case tc.differs != "":
				t.Logf("moto differs, as recorded (%s):\nfake: %s\nmoto: %s", tc.differs, fakeSaid, motoSaid)
			}
		})
	}
	// Every call the provider can make has a case.
	for _, iface := range []reflect.Type{
		reflect.TypeFor[sdk.EC2](), reflect.TypeFor[sdk.SSM](), reflect.TypeFor[sdk.SQS](), reflect.TypeFor[sdk.IAM](),
		reflect.TypeFor[sdk.EKS](), reflect.TypeFor[sdk.EventBridge](), reflect.TypeFor[sdk.Pricing](), reflect.TypeFor[sdk.ARCZonalShift](),
	} {
		for i := range iface.NumMethod() {
			if op := iface.Name() + "." + iface.Method(i).Name; !covered[op] {
				t.Errorf("no contract case calls %s", op)
			}
		}
	}
}

// The verdicts where moto is wrong or lacks something; docs/aws.md quotes
// them.
const (
	motoNoPages               = "moto ignores MaxResults: it answers every item on one page with no NextToken; AWS pages"
	motoImageArch             = "moto's RegisterImage ignores Architecture (the image has none, and the architecture filter matches nothing); AWS keeps it"
	motoNoPlacementGroups     = "moto 5.2.1 does not implement CreatePlacementGroup or DescribePlacementGroups"
	motoNoReservations        = "moto 5.2.1 does not implement DescribeCapacityReservations"
	motoDeleteMissingTemplate = "moto answers MissingParameter for a launch template name that does not exist; AWS answers InvalidLaunchTemplateName.NotFoundException"
	motoFleetErrors           = "moto refuses the whole call with InvalidLaunchTemplateName.NotFoundException, the fake reports it in the instant fleet's Errors; launch.ClassifyError turns either into the same template-not-found error, so the provider does not see the difference"
	motoMalformedID           = "moto answers InvalidInstanceID.NotFound for an ID that is not shaped like one; AWS answers InvalidInstanceID.Malformed"
	motoFleetGroups           = "moto's CreateFleet does not give instances the launch template's SecurityGroupIds (DescribeInstances lists none); AWS does"
	motoRemoveMissingRole     = "moto fails with HTTP 500 (a server error) when the role is not in the profile; AWS answers NoSuchEntity"
	motoListProfiles          = "moto's ListInstanceProfiles ignores PathPrefix and MaxItems (every profile, one page); AWS lists the profiles under the prefix, MaxItems at a time. The collector checks each profile's path itself, so it deletes nothing outside the cluster's paths against moto either"
	motoClusterConfig         = "moto's DescribeCluster has no accessConfig (authenticationMode); AWS answers it for every cluster"
	motoNoAccessEntries       = "moto 5.2.1 does not implement EKS access entries"
	motoNoPodIdentity         = "moto 5.2.1 does not implement EKS Pod Identity associations"
	motoNoPricing             = "moto has no Price List API; the provider keeps the embedded on-demand prices when GetProducts fails"
	motoNoZonalShift          = "moto has no ARC zonal shift API"
	motoTagsUnknown           = "moto tags an instance that does not exist without complaint; AWS answers InvalidInstanceID.NotFound"
	motoSpotPages             = "moto's DescribeSpotPriceHistory ignores MaxResults and the AvailabilityZone parameter: one page with every zone; AWS pages and keeps the zone asked for"
	motoTerminateAgain        = "moto answers a second TerminateInstances of a terminated instance with current state shutting-down; AWS answers terminated, the state it stays in"
	motoTruncates             = "moto's DescribeLaunchTemplates stops at MaxResults without a NextToken, so the paginator loses the rest; AWS pages"
)

// Tags and names the cases seed.
const (
	clusterTag  = "karpenter.sh/discovery"
	clusterName = "contract"
)

func discovery(extra ...string) map[string]string {
	tags := map[string]string{clusterTag: clusterName}
	for i := 0; i+1 < len(extra); i += 2 {
		tags[extra[i]] = extra[i+1]
	}
	return tags
}

func tagFilter(key, value string) ec2types.Filter {
	return ec2types.Filter{Name: aws.String("tag:" + key), Values: []string{value}}
}

func ec2TagMap(tags []ec2types.Tag) map[string]string {
	out := map[string]string{}
	for _, t := range tags {
		out[aws.ToString(t.Key)] = aws.ToString(t.Value)
	}
	return out
}

// seedNetwork creates three tagged subnets, one per zone, an untagged one,
// and two security groups.
func seedNetwork(t *testing.T, w world) {
	for i, z := range contractZones {
		w.subnet(t, "subnet-"+z[len(z)-1:], z, "10.0."+strconv.Itoa(i)+".0/24", discovery("Name", "private-"+z))
	}
	w.subnet(t, "subnet-other", contractZones[0], "10.0.9.0/24", map[string]string{"Name": "public"})
	w.securityGroup(t, "sg-nodes", "contract-nodes", discovery("Name", "nodes"))
	w.securityGroup(t, "sg-other", "contract-other", map[string]string{"Name": "other"})
}

type subnetView struct {
	ID, Zone string
	// ZoneIDShaped: the zone-name-to-ID mapping differs per account, so
	// only the form is compared.
	ZoneIDShaped bool
	Free         int32
	Tags         map[string]string
}

func subnetViews(w world, subnets []ec2types.Subnet) []subnetView {
	out := make([]subnetView, 0, len(subnets))
	for _, s := range subnets {
		out = append(out, subnetView{
			ID: w.sym(aws.ToString(s.SubnetId)), Zone: aws.ToString(s.AvailabilityZone),
			ZoneIDShaped: strings.HasPrefix(aws.ToString(s.AvailabilityZoneId), "use1-az"),
			Free:         aws.ToInt32(s.AvailableIpAddressCount), Tags: ec2TagMap(s.Tags),
		})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out
}

// pages is the shape of a paginated answer: how many items each page held
// (when the page size is honoured, all but the last hold MaxResults) and
// the items, sorted.
type pages struct {
	Sizes []int
	Items []string
}

func (p *pages) add(items []string) {
	p.Sizes = append(p.Sizes, len(items))
	p.Items = append(p.Items, items...)
	sort.Strings(p.Items)
}

// collectPages reads every page of pg (a pager, see listings_test.go), each
// named by its items' names.
func collectPages[O, Opt any](ctx context.Context, pg pager[O, Opt], names func(O) []string) (any, error) {
	var p pages
	for pg.HasMorePages() {
		out, err := pg.NextPage(ctx)
		if err != nil {
			return nil, err
		}
		p.add(names(out))
	}
	return p, nil
}

func contractCases() []contractCase {
	return slices.Concat(networkCases(), imageCases(), typeCases(), launchCases(), instanceCases(), otherServiceCases())
}

func networkCases() []contractCase {
	return []contractCase{
		{
			op: "EC2.DescribeSubnets", name: "by tag", seed: seedNetwork,
			call: func(ctx context.Context, _ *testing.T, w world) (any, error) {
				out, err := w.clients().EC2.DescribeSubnets(ctx, &ec2.DescribeSubnetsInput{Filters: []ec2types.Filter{tagFilter(clusterTag, clusterName)}})
				if err != nil {
					return nil, err
				}
				return subnetViews(w, out.Subnets), nil
			},
		},
		{
			op: "EC2.DescribeSubnets", name: "by ID", seed: seedNetwork,
			call: func(ctx context.Context, _ *testing.T, w world) (any, error) {
				out, err := w.clients().EC2.DescribeSubnets(ctx, &ec2.DescribeSubnetsInput{SubnetIds: []string{w.id("subnet-b"), w.id("subnet-other")}})
				if err != nil {
					return nil, err
				}
				return subnetViews(w, out.Subnets), nil
			},
		},
		{
			op: "EC2.DescribeSubnets", name: "tag-key and wildcard", seed: seedNetwork,
			call: func(ctx context.Context, _ *testing.T, w world) (any, error) {
				out, err := w.clients().EC2.DescribeSubnets(ctx, &ec2.DescribeSubnetsInput{Filters: []ec2types.Filter{
					{Name: aws.String("tag-key"), Values: []string{clusterTag}},
					{Name: aws.String("tag:Name"), Values: []string{"private-*"}},
				}})
				if err != nil {
					return nil, err
				}
				return subnetViews(w, out.Subnets), nil
			},
		},
		{
			op: "EC2.DescribeSubnets", name: "subnet-id filter", seed: seedNetwork,
			call: func(ctx context.Context, _ *testing.T, w world) (any, error) {
				out, err := w.clients().EC2.DescribeSubnets(ctx, &ec2.DescribeSubnetsInput{Filters: []ec2types.Filter{
					{Name: aws.String("subnet-id"), Values: []string{w.id("subnet-a"), w.id("subnet-c")}},
				}})
				if err != nil {
					return nil, err
				}
				return subnetViews(w, out.Subnets), nil
			},
		},
		{
			op: "EC2.DescribeSubnets", name: "unknown ID", seed: seedNetwork,
			call: func(ctx context.Context, _ *testing.T, w world) (any, error) {
				return w.clients().EC2.DescribeSubnets(ctx, &ec2.DescribeSubnetsInput{SubnetIds: []string{"subnet-0123456789abcdef0"}})
			},
		},
		{
			op: "EC2.DescribeSubnets", name: "pages of 5", differs: motoNoPages,
			seed: func(t *testing.T, w world) {
				for i := range 7 {
					w.subnet(t, "subnet-"+strconv.Itoa(i), contractZones[i%3], "10.0."+strconv.Itoa(i)+".0/24", discovery())
				}
			},
			call: func(ctx context.Context, _ *testing.T, w world) (any, error) {
				pg := ec2.NewDescribeSubnetsPaginator(w.clients().EC2, &ec2.DescribeSubnetsInput{
					Filters: []ec2types.Filter{tagFilter(clusterTag, clusterName)}, MaxResults: aws.Int32(5),
				})
				return collectPages(ctx, pg, func(out *ec2.DescribeSubnetsOutput) (items []string) {
					for _, s := range out.Subnets {
						items = append(items, w.sym(aws.ToString(s.SubnetId)))
					}
					return items
				})
			},
		},
		{
			op: "EC2.DescribeSecurityGroups", name: "by tag", seed: seedNetwork,
			call: func(ctx context.Context, _ *testing.T, w world) (any, error) {
				return describeGroups(ctx, w, &ec2.DescribeSecurityGroupsInput{Filters: []ec2types.Filter{tagFilter(clusterTag, clusterName)}})
			},
		},
		{
			op: "EC2.DescribeSecurityGroups", name: "by name", seed: seedNetwork,
			call: func(ctx context.Context, _ *testing.T, w world) (any, error) {
				return describeGroups(ctx, w, &ec2.DescribeSecurityGroupsInput{Filters: []ec2types.Filter{
					{Name: aws.String("group-name"), Values: []string{"contract-other"}},
				}})
			},
		},
		{
			op: "EC2.DescribeSecurityGroups", name: "by ID", seed: seedNetwork,
			call: func(ctx context.Context, _ *testing.T, w world) (any, error) {
				return describeGroups(ctx, w, &ec2.DescribeSecurityGroupsInput{Filters: []ec2types.Filter{
					{Name: aws.String("group-id"), Values: []string{w.id("sg-nodes")}},
				}})
			},
		},
		{
			op: "EC2.DescribeSecurityGroups", name: "pages of 5", differs: motoNoPages,
			seed: func(t *testing.T, w world) {
				for i := range 7 {
					w.securityGroup(t, "sg-"+strconv.Itoa(i), "contract-"+strconv.Itoa(i), discovery())
				}
			},
			call: func(ctx context.Context, _ *testing.T, w world) (any, error) {
				pg := ec2.NewDescribeSecurityGroupsPaginator(w.clients().EC2, &ec2.DescribeSecurityGroupsInput{
					Filters: []ec2types.Filter{tagFilter(clusterTag, clusterName)}, MaxResults: aws.Int32(5),
				})
				return collectPages(ctx, pg, func(out *ec2.DescribeSecurityGroupsOutput) (items []string) {
					for _, g := range out.SecurityGroups {
						items = append(items, w.sym(aws.ToString(g.GroupId)))
					}
					return items
				})
			},
		},
		{
			op: "EC2.DescribeSecurityGroups", name: "unknown ID", seed: seedNetwork,
			call: func(ctx context.Context, _ *testing.T, w world) (any, error) {
				return describeGroups(ctx, w, &ec2.DescribeSecurityGroupsInput{GroupIds: []string{"sg-0123456789abcdef0"}})
			},
		},
		{
			op: "EC2.DescribePlacementGroups", name: "by name", motoLacks: motoNoPlacementGroups, fakeSays: `"contract-spread contract-spread spread available"`,
			seed: func(t *testing.T, w world) {
				w.placementGroup(t, "contract-cluster", "cluster")
				w.placementGroup(t, "contract-spread", "spread")
			},
			call: func(ctx context.Context, _ *testing.T, w world) (any, error) {
				out, err := w.clients().EC2.DescribePlacementGroups(ctx, &ec2.DescribePlacementGroupsInput{GroupNames: []string{"contract-spread"}})
				if err != nil {
					return nil, err
				}
				var views []string
				for _, g := range out.PlacementGroups {
					views = append(views, strings.Join([]string{aws.ToString(g.GroupName), w.sym(aws.ToString(g.GroupId)), string(g.Strategy), string(g.State)}, " "))
				}
				return views, nil
			},
		},
		{
			op: "EC2.DescribePlacementGroups", name: "unknown name", motoLacks: motoNoPlacementGroups, fakeSays: "error InvalidPlacementGroup.Unknown",
			call: func(ctx context.Context, _ *testing.T, w world) (any, error) {
				return w.clients().EC2.DescribePlacementGroups(ctx, &ec2.DescribePlacementGroupsInput{GroupNames: []string{"contract-none"}})
			},
		},
	}
}

func describeGroups(ctx context.Context, w world, in *ec2.DescribeSecurityGroupsInput) (any, error) {
	out, err := w.clients().EC2.DescribeSecurityGroups(ctx, in)
	if err != nil {
		return nil, err
	}
	var views []string
	for _, g := range out.SecurityGroups {
		views = append(views, w.sym(aws.ToString(g.GroupId))+" "+aws.ToString(g.GroupName)+" "+answer(ec2TagMap(g.Tags), nil))
	}
	sort.Strings(views)
	return views, nil
}

func seedImages(t *testing.T, w world) {
	w.image(t, "ami-x86", "contract-node-x86_64-v1", "x86_64", discovery("version", "v1"))
	w.image(t, "ami-arm", "contract-node-arm64-v1", "arm64", discovery("version", "v1"))
	w.image(t, "ami-other", "other-image", "x86_64", nil)
	w.parameter(t, "/contract/ami/x86_64", "ami-x86")
}

type imageView struct {
	ID, Name, State string
	// Arch is only compared by the case about it (motoImageArch).
	Arch  string `json:",omitempty"`
	Dated bool
	Tags  map[string]string
}

func describeImages(ctx context.Context, w world, in *ec2.DescribeImagesInput) (any, error) {
	return describeImagesArch(ctx, w, in, false)
}

func describeImagesArch(ctx context.Context, w world, in *ec2.DescribeImagesInput, withArch bool) (any, error) {
	out, err := w.clients().EC2.DescribeImages(ctx, in)
	if err != nil {
		return nil, err
	}
	var views []imageView
	for _, img := range out.Images {
		views = append(views, imageView{
			ID: w.sym(aws.ToString(img.ImageId)), Name: aws.ToString(img.Name),
			State: string(img.State), Dated: ec2Date(aws.ToString(img.CreationDate)), Tags: ec2TagMap(img.Tags),
		})
		if withArch {
			views[len(views)-1].Arch = string(img.Architecture)
		}
	}
	sort.Slice(views, func(i, j int) bool { return views[i].ID < views[j].ID })
	return views, nil
}

func imageCases() []contractCase {
	return []contractCase{
		{
			op: "EC2.DescribeImages", name: "by tag, owned by self", seed: seedImages,
			call: func(ctx context.Context, _ *testing.T, w world) (any, error) {
				return describeImages(ctx, w, &ec2.DescribeImagesInput{Owners: []string{"self"}, Filters: []ec2types.Filter{tagFilter(clusterTag, clusterName)}})
			},
		},
		{
			op: "EC2.DescribeImages", name: "by name wildcard", seed: seedImages,
			call: func(ctx context.Context, _ *testing.T, w world) (any, error) {
				return describeImages(ctx, w, &ec2.DescribeImagesInput{Owners: []string{"self"}, Filters: []ec2types.Filter{
					{Name: aws.String("name"), Values: []string{"contract-node-*"}},
				}})
			},
		},
		{
			op: "EC2.DescribeImages", name: "by architecture", seed: seedImages, differs: motoImageArch,
			call: func(ctx context.Context, _ *testing.T, w world) (any, error) {
				return describeImagesArch(ctx, w, &ec2.DescribeImagesInput{Owners: []string{"self"}, Filters: []ec2types.Filter{
					{Name: aws.String("architecture"), Values: []string{"arm64"}},
				}}, true)
			},
		},
		{
			op: "EC2.DescribeImages", name: "by image-id filter", seed: seedImages,
			call: func(ctx context.Context, _ *testing.T, w world) (any, error) {
				return describeImages(ctx, w, &ec2.DescribeImagesInput{Filters: []ec2types.Filter{
					{Name: aws.String("image-id"), Values: []string{w.id("ami-x86"), w.id("ami-other")}},
				}})
			},
		},
		{
			op: "EC2.DescribeImages", name: "malformed ID", seed: seedImages,
			call: func(ctx context.Context, _ *testing.T, w world) (any, error) {
				return describeImages(ctx, w, &ec2.DescribeImagesInput{ImageIds: []string{"image-1"}})
			},
		},
		{
			op: "EC2.DescribeImages", name: "unknown ID", seed: seedImages,
			call: func(ctx context.Context, _ *testing.T, w world) (any, error) {
				return describeImages(ctx, w, &ec2.DescribeImagesInput{ImageIds: []string{"ami-0123456789abcdef0"}})
			},
		},
		{
			op: "EC2.DescribeImages", name: "pages of 6", differs: motoNoPages,
			seed: func(t *testing.T, w world) {
				for i := range 8 {
					w.image(t, "ami-"+strconv.Itoa(i), "contract-paged-"+strconv.Itoa(i), "x86_64", discovery())
				}
			},
			call: func(ctx context.Context, _ *testing.T, w world) (any, error) {
				pg := ec2.NewDescribeImagesPaginator(w.clients().EC2, &ec2.DescribeImagesInput{
					Owners: []string{"self"}, Filters: []ec2types.Filter{tagFilter(clusterTag, clusterName)}, MaxResults: aws.Int32(6),
				})
				return collectPages(ctx, pg, func(out *ec2.DescribeImagesOutput) (items []string) {
					for _, img := range out.Images {
						items = append(items, w.sym(aws.ToString(img.ImageId)))
					}
					return items
				})
			},
		},
		{
			op: "SSM.GetParameter", name: "found", seed: seedImages,
			call: func(ctx context.Context, _ *testing.T, w world) (any, error) {
				out, err := w.clients().SSM.GetParameter(ctx, &ssm.GetParameterInput{Name: aws.String("/contract/ami/x86_64")})
				if err != nil {
					return nil, err
				}
				return []string{aws.ToString(out.Parameter.Name), w.sym(aws.ToString(out.Parameter.Value)), string(out.Parameter.Type)}, nil
			},
		},
		{
			op: "SSM.GetParameter", name: "missing", seed: seedImages,
			call: func(ctx context.Context, _ *testing.T, w world) (any, error) {
				return w.clients().SSM.GetParameter(ctx, &ssm.GetParameterInput{Name: aws.String("/contract/ami/none")})
			},
		},
	}
}

// ec2Date reports whether s is one of the date forms EC2 answers with.
func ec2Date(s string) bool {
	for _, layout := range []string{"2006-01-02T15:04:05.000Z", time.RFC3339} {
		if _, err := time.Parse(layout, s); err == nil {
			return true
		}
	}
	return false
}
