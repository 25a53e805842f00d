package launch

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"sort"
	"sync"

	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	smithy "github.com/aws/smithy-go"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	awsv1 "github.com/stevedore-autoscaler/stevedore/api/aws/v1"
	"github.com/stevedore-autoscaler/stevedore/api/wellknown"
	"github.com/stevedore-autoscaler/stevedore/cloud/aws/amifamily"
	"github.com/stevedore-autoscaler/stevedore/cloud/aws/sdk"
	"github.com/stevedore-autoscaler/stevedore/cloud/aws/userdata"
)

// TemplateNamePrefix starts the name of every launch template stevedore
// manages; the cluster name and a content hash follow.
const TemplateNamePrefix = "stevedore/"

// TemplateParams is everything a launch template is made of. Instance types
// are not part of it: one template serves every instance type launched with
// the same image and the same user data.
type TemplateParams struct {
	// ClusterName, ClusterEndpoint, CABundle (base64 PEM), ClusterCIDR (the
	// service CIDR) and ClusterDNS go into the bootstrap configuration.
	ClusterName     string
	ClusterEndpoint string
	CABundle        string
	ClusterCIDR     string
	ClusterDNS      []string
	// NodeClass is the EC2NodeClass with its resolved status (security
	// groups, instance profile).
	NodeClass *awsv1.EC2NodeClass
	// ImageID is the AMI of the template.
	ImageID string
	// MaxPods, if positive, is the pod limit written into the user data: the
	// user-data group of the instance types the template serves.
	MaxPods int32
	// Labels and Taints (startup taints included) are registered by the
	// kubelet; they must be the same for every instance type of the group.
	Labels map[string]string
	Taints []corev1.Taint
	// NodePool is the NodePool the template launches for. It is tagged on
	// the template (karpenter.sh/nodepool) and on the network interfaces
	// and spot requests the template creates, as Karpenter does: its IAM
	// policy admits launches only from templates and into resources that
	// carry the tag, so templates are not shared between NodePools.
	NodePool string
	// CapacityType is the capacity type launched with the template; spot
	// templates also tag the spot request.
	CapacityType string
	// Placement is the node class's resolved placement group, if any.
	Placement Placement
	// Reservation, when set, is the capacity reservation the template
	// launches into: its instances may launch only there
	// (capacity-reservations-only), and a capacity block's are
	// capacity-block market instances.
	Reservation *Reservation
	// OptOutOfReservations sets the capacity reservation preference of a
	// template without Reservation to none, so that its spot and on-demand
	// instances do not land in open capacity reservations, which stay for
	// the launches that target them: Karpenter's behaviour while its
	// ReservedCapacity feature gate is on.
	OptOutOfReservations bool
	// UserData, when set, remembers the user data generated before, which
	// launches with the same node class, labels, taints and pod limit
	// share.
	UserData *UserDataCache
}

// Template is a resolved launch template, ready to be created.
type Template struct {
	// Name is stevedore/<cluster>/<hash of Data and Tags>; the tags name the
	// NodePool, so each NodePool has its own templates.
	Name string
	// ImageID repeats Data.ImageId.
	ImageID string
	// Data is the launch template's content.
	Data ec2types.RequestLaunchTemplateData
	// Tags are put on the template itself.
	Tags map[string]string
}

// OwnershipTags are the tags that mark an EC2 resource as launched by
// stevedore for a cluster and node class, merged over the node class's own
// tags (which may not set them).
func OwnershipTags(clusterName string, nodeClass *awsv1.EC2NodeClass) map[string]string {
	tags := map[string]string{}
	if nodeClass != nil {
		for k, v := range nodeClass.Spec.Tags {
			tags[k] = v
		}
		tags[wellknown.TagEC2NodeClass] = nodeClass.Name
	}
	tags[wellknown.TagClusterPrefix+clusterName] = "owned"
	tags[wellknown.TagEKSClusterName] = clusterName
	return tags
}

// DefaultBlockDeviceMappings returns the volumes an AMI family gets when the
// node class lists none: a 20Gi encrypted gp3 root volume on AL2 and AL2023,
// a 4Gi OS volume and a 20Gi data volume on Bottlerocket, a 50Gi root volume
// on Windows, and nothing on Custom (the image's own mappings apply).
func DefaultBlockDeviceMappings(family awsv1.AMIFamily) []awsv1.BlockDeviceMapping {
	gp3 := func(device, size string, root bool) awsv1.BlockDeviceMapping {
		q := resource.MustParse(size)
		return awsv1.BlockDeviceMapping{
			DeviceName: ptr(device),
			RootVolume: root,
			EBS: &awsv1.BlockDevice{
				VolumeSize: &q, VolumeType: ptr("gp3"), Encrypted: ptr(true), DeleteOnTermination: ptr(true),
			},
		}
	}
	switch family {
	case awsv1.AMIFamilyCustom:
		return nil
	case awsv1.AMIFamilyBottlerocket:
		return []awsv1.BlockDeviceMapping{gp3("/dev/xvda", "4Gi", false), gp3("/dev/xvdb", "20Gi", true)}
	case awsv1.AMIFamilyWindows2019, awsv1.AMIFamilyWindows2022, awsv1.AMIFamilyWindows2025:
		return []awsv1.BlockDeviceMapping{gp3("/dev/sda1", "50Gi", true)}
	default:
		return []awsv1.BlockDeviceMapping{gp3("/dev/xvda", "20Gi", true)}
	}
}

// BuildTemplate resolves a launch template. It is a pure function of p: equal
// parameters give the same name and content.
func BuildTemplate(p TemplateParams) (*Template, error) {
	nc := p.NodeClass
	if nc == nil {
		return nil, errors.New("launch template: no node class")
	}
	if p.ImageID == "" {
		return nil, fmt.Errorf("launch template for EC2NodeClass %q: no image", nc.Name)
	}
	if nc.Status.InstanceProfile == "" {
		return nil, fmt.Errorf("launch template for EC2NodeClass %q: status.instanceProfile is empty; the node class has not resolved its instance profile yet", nc.Name)
	}
	family := amifamily.ResolvedFamily(&nc.Spec)
	encoded, err := p.UserData.generate(family, userdata.Options{
		ClusterName:         p.ClusterName,
		ClusterEndpoint:     p.ClusterEndpoint,
		CABundle:            p.CABundle,
		ClusterCIDR:         p.ClusterCIDR,
		ClusterDNS:          p.ClusterDNS,
		Kubelet:             nc.Spec.Kubelet,
		MaxPods:             p.MaxPods,
		Labels:              p.Labels,
		Taints:              p.Taints,
		InstanceStorePolicy: nc.Spec.InstanceStorePolicy,
		UserData:            nc.Spec.UserData,
	})
	if err != nil {
		return nil, fmt.Errorf("user data for EC2NodeClass %q: %w", nc.Name, err)
	}
	tags := OwnershipTags(p.ClusterName, nc)
	if p.NodePool != "" {
		tags[wellknown.TagNodePool] = p.NodePool
	}
	sgs := make([]string, 0, len(nc.Status.SecurityGroups))
	for _, sg := range nc.Status.SecurityGroups {
		sgs = append(sgs, sg.ID)
	}
	sort.Strings(sgs)
	bdms := nc.Spec.BlockDeviceMappings
	if len(bdms) == 0 {
		bdms = DefaultBlockDeviceMappings(family)
	}
	data := ec2types.RequestLaunchTemplateData{
		ImageId:             ptr(p.ImageID),
		UserData:            ptr(encoded),
		IamInstanceProfile:  &ec2types.LaunchTemplateIamInstanceProfileSpecificationRequest{Name: ptr(nc.Status.InstanceProfile)},
		BlockDeviceMappings: blockDeviceMappings(bdms),
		MetadataOptions:     metadataOptions(nc.Spec.MetadataOptions),
		Monitoring:          &ec2types.LaunchTemplatesMonitoringRequest{Enabled: ptr(nc.Spec.DetailedMonitoring != nil && *nc.Spec.DetailedMonitoring)},
		TagSpecifications: []ec2types.LaunchTemplateTagSpecificationRequest{
			{ResourceType: ec2types.ResourceTypeNetworkInterface, Tags: toTags(tags)},
		},
	}
	if p.CapacityType == wellknown.CapacityTypeSpot {
		// An instant fleet's request tags cover the fleet, instances and
		// volumes only; the spot request takes its tags from here.
		data.TagSpecifications = append(data.TagSpecifications, ec2types.LaunchTemplateTagSpecificationRequest{
			ResourceType: ec2types.ResourceTypeSpotInstancesRequest, Tags: toTags(tags),
		})
	}
	switch {
	case p.Reservation != nil:
		data.CapacityReservationSpecification = &ec2types.LaunchTemplateCapacityReservationSpecificationRequest{
			CapacityReservationPreference: ec2types.CapacityReservationPreferenceCapacityReservationsOnly,
			CapacityReservationTarget:     &ec2types.CapacityReservationTarget{CapacityReservationId: ptr(p.Reservation.ID)},
		}
		if p.Reservation.Type == CapacityReservationTypeCapacityBlock {
			data.InstanceMarketOptions = &ec2types.LaunchTemplateInstanceMarketOptionsRequest{MarketType: ec2types.MarketTypeCapacityBlock}
		}
	case p.OptOutOfReservations:
		data.CapacityReservationSpecification = &ec2types.LaunchTemplateCapacityReservationSpecificationRequest{
			CapacityReservationPreference: ec2types.CapacityReservationPreferenceNone,
		}
	}
	// Security groups go on the interfaces when the template lists any;
	// EC2 rejects them in both places.
	if data.NetworkInterfaces = networkInterfaces(&nc.Spec, sgs, ipv6Cluster(p.ClusterDNS)); data.NetworkInterfaces == nil {
		data.SecurityGroupIds = sgs
	}
	data.CpuOptions = cpuOptions(nc.Spec.CPUOptions)
	data.Placement = placement(p.Placement)
	return &Template{Name: templateName(p.ClusterName, data, tags), ImageID: p.ImageID, Data: data, Tags: tags}, nil
}

// templateName is content-addressed: the hash covers everything the template
// holds, so a change of any input yields a new template rather than a change
// under a running fleet.
func templateName(cluster string, data ec2types.RequestLaunchTemplateData, tags map[string]string) string {
	b, err := json.Marshal(struct {
		Data ec2types.RequestLaunchTemplateData
		Tags map[string]string
	}{data, tags})
	if err != nil {
		// The SDK's request types hold only plain values; this cannot fail.
		panic(fmt.Sprintf("hashing launch template: %v", err))
	}
	sum := sha256.Sum256(b)
	return TemplateNamePrefix + cluster + "/" + hex.EncodeToString(sum[:16])
}

func blockDeviceMappings(bdms []awsv1.BlockDeviceMapping) []ec2types.LaunchTemplateBlockDeviceMappingRequest {
	out := make([]ec2types.LaunchTemplateBlockDeviceMappingRequest, 0, len(bdms))
	for _, m := range bdms {
		r := ec2types.LaunchTemplateBlockDeviceMappingRequest{DeviceName: m.DeviceName}
		if e := m.EBS; e != nil {
			ebs := &ec2types.LaunchTemplateEbsBlockDeviceRequest{
				DeleteOnTermination:      e.DeleteOnTermination,
				Encrypted:                e.Encrypted,
				KmsKeyId:                 e.KMSKeyID,
				SnapshotId:               e.SnapshotID,
				VolumeInitializationRate: e.VolumeInitializationRate,
			}
			if ebs.DeleteOnTermination == nil {
				ebs.DeleteOnTermination = ptr(true)
			}
			if e.IOPS != nil {
				ebs.Iops = ptr(int32(*e.IOPS))
			}
			if e.Throughput != nil {
				ebs.Throughput = ptr(int32(*e.Throughput))
			}
			if e.VolumeSize != nil {
				ebs.VolumeSize = ptr(int32(math.Ceil(float64(e.VolumeSize.Value()) / (1 << 30))))
			}
			if e.VolumeType != nil {
				ebs.VolumeType = ec2types.VolumeType(*e.VolumeType)
			}
			r.Ebs = ebs
		}
		out = append(out, r)
	}
	return out
}

// metadataOptions applies the node class's IMDS settings over the secure
// defaults (IMDSv2 only, hop limit 1). Instance metadata tags stay off: tag
// keys with a slash, which stevedore's ownership tags have, break them.
func metadataOptions(m *awsv1.MetadataOptions) *ec2types.LaunchTemplateInstanceMetadataOptionsRequest {
	out := &ec2types.LaunchTemplateInstanceMetadataOptionsRequest{
		HttpEndpoint:            ec2types.LaunchTemplateInstanceMetadataEndpointStateEnabled,
		HttpProtocolIpv6:        ec2types.LaunchTemplateInstanceMetadataProtocolIpv6Disabled,
		HttpPutResponseHopLimit: ptr(int32(1)),
		HttpTokens:              ec2types.LaunchTemplateHttpTokensStateRequired,
		InstanceMetadataTags:    ec2types.LaunchTemplateInstanceMetadataTagsStateDisabled,
	}
	if m == nil {
		return out
	}
	if m.HTTPEndpoint != nil {
		out.HttpEndpoint = ec2types.LaunchTemplateInstanceMetadataEndpointState(*m.HTTPEndpoint)
	}
	if m.HTTPProtocolIPv6 != nil {
		out.HttpProtocolIpv6 = ec2types.LaunchTemplateInstanceMetadataProtocolIpv6(*m.HTTPProtocolIPv6)
	}
	if m.HTTPPutResponseHopLimit != nil {
		out.HttpPutResponseHopLimit = ptr(int32(*m.HTTPPutResponseHopLimit))
	}
	if m.HTTPTokens != nil {
		out.HttpTokens = ec2types.LaunchTemplateHttpTokensState(*m.HTTPTokens)
	}
	return out
}

// Templates makes sure launch templates exist in EC2, remembering the ones it
// has seen so that a template is described at most once until invalidated.
// It is safe for concurrent use.
type Templates struct {
	ec2   sdk.EC2
	mu    sync.Mutex
	known map[string]bool
}

// NewTemplates returns a Templates that works through client.
func NewTemplates(client sdk.EC2) *Templates {
	return &Templates{ec2: client, known: map[string]bool{}}
}

// Ensure creates the template unless it exists: it looks it up by name
// (DescribeLaunchTemplates) and creates it (CreateLaunchTemplate) if EC2
// does not know it. Losing a creation race to another caller is success.
func (t *Templates) Ensure(ctx context.Context, tmpl *Template) error {
	t.mu.Lock()
	ok := t.known[tmpl.Name]
	t.mu.Unlock()
	if ok {
		return nil
	}
	_, err := t.ec2.DescribeLaunchTemplates(ctx, &ec2.DescribeLaunchTemplatesInput{LaunchTemplateNames: []string{tmpl.Name}})
	switch {
	case err == nil:
	case ErrorCode(err) == "InvalidLaunchTemplateName.NotFoundException":
		data := tmpl.Data
		_, err = t.ec2.CreateLaunchTemplate(ctx, &ec2.CreateLaunchTemplateInput{
			LaunchTemplateName: ptr(tmpl.Name),
			LaunchTemplateData: &data,
			TagSpecifications: []ec2types.TagSpecification{
				{ResourceType: ec2types.ResourceTypeLaunchTemplate, Tags: toTags(tmpl.Tags)},
			},
		})
		if err != nil && ErrorCode(err) != "InvalidLaunchTemplateName.AlreadyExistsException" {
			return fmt.Errorf("creating launch template %s: %w", tmpl.Name, err)
		}
	default:
		return fmt.Errorf("describing launch template %s: %w", tmpl.Name, err)
	}
	t.mu.Lock()
	t.known[tmpl.Name] = true
	t.mu.Unlock()
	return nil
}

// Invalidate forgets that the template exists, for example after CreateFleet
// reported it missing; the next Ensure checks EC2 again.
func (t *Templates) Invalidate(name string) {
	t.mu.Lock()
	delete(t.known, name)
	t.mu.Unlock()
}

// ErrorCode returns the AWS error code of err, or "" when err carries none.
func ErrorCode(err error) string {
	var apiErr smithy.APIError
	if errors.As(err, &apiErr) {
		return apiErr.ErrorCode()
	}
	return ""
}

// ErrorMessage returns the AWS error message of err, or err's text.
func ErrorMessage(err error) string {
	var apiErr smithy.APIError
	if errors.As(err, &apiErr) {
		return apiErr.ErrorMessage()
	}
	return err.Error()
}

func toTags(m map[string]string) []ec2types.Tag {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	out := make([]ec2types.Tag, 0, len(keys))
	for _, k := range keys {
		out = append(out, ec2types.Tag{Key: ptr(k), Value: ptr(m[k])})
	}
	return out
}

func ptr[T any](v T) *T { return &v }
