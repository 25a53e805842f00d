package fake

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"github.com/aws/aws-sdk-go-v2/service/ssm"
	ssmtypes "github.com/aws/aws-sdk-go-v2/service/ssm/types"
)

// ec2Time is the timestamp format of DescribeImages string dates.
const ec2Time = "2006-01-02T15:04:05.000Z"

// Image describes an AMI to register with AddImage or ReleaseImage.
type Image struct {
	// ID defaults to a generated ami-<17 hex> ID.
	ID   string
	Name string
	// OwnerID defaults to the fake's account (AddImage) or AmazonOwnerID
	// (ReleaseImage). OwnerAlias is "amazon" for Amazon's images.
	OwnerID    string
	OwnerAlias string
	// Architecture is x86_64 or arm64 ("amd64" is accepted for x86_64).
	Architecture string
	// CreationDate defaults to the clock's now.
	CreationDate time.Time
	// DeprecationTime is when the image becomes deprecated; zero is never.
	DeprecationTime time.Time
	// State defaults to "available".
	State       string
	Description string
	// Windows marks a Windows image (Platform "windows").
	Windows bool
	Tags    map[string]string
	// ReleaseVersion is the release the image belongs to, used by
	// ReleaseImage for the pinned SSM path and the default name: v20240703 for
	// the Amazon Linux families, v1.20.4 for Bottlerocket. Defaults to
	// "v" + the creation date as YYYYMMDD.
	ReleaseVersion string
}

type image struct {
	Image
	seq int64
}

func (i *image) deprecated(now time.Time) bool {
	return !i.DeprecationTime.IsZero() && !now.Before(i.DeprecationTime)
}

type parameter struct {
	name, value string
	version     int64
	modified    time.Time
}

func normalizeArch(arch string) string {
	switch arch {
	case "amd64", "x86_64", "":
		return "x86_64"
	}
	return arch
}

// AddImage registers an AMI and returns it with its defaults filled in.
func (f *AWS) AddImage(img Image) (Image, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.addImage(img, f.opts.AccountID)
}

func (f *AWS) addImage(img Image, defaultOwner string) (Image, error) {
	if img.ID == "" {
		img.ID = "ami-" + f.hex(17)
	}
	if !strings.HasPrefix(img.ID, "ami-") {
		return Image{}, fmt.Errorf("image ID %q must start with ami-", img.ID)
	}
	if _, dup := f.images[img.ID]; dup {
		return Image{}, fmt.Errorf("image %s already exists", img.ID)
	}
	img.Architecture = normalizeArch(img.Architecture)
	if img.Architecture != "x86_64" && img.Architecture != "arm64" {
		return Image{}, fmt.Errorf("image architecture %q: want x86_64 or arm64", img.Architecture)
	}
	if img.OwnerID == "" {
		img.OwnerID = defaultOwner
	}
	if img.CreationDate.IsZero() {
		img.CreationDate = f.now()
	}
	if img.State == "" {
		img.State = "available"
	}
	if img.Name == "" {
		img.Name = img.ID
	}
	img.Tags = copyMap(img.Tags)
	f.images[img.ID] = &image{Image: img, seq: f.nextSeq()}
	return img, nil
}

// DeprecateImage sets an image's deprecation time.
func (f *AWS) DeprecateImage(id string, at time.Time) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	img, ok := f.images[id]
	if !ok {
		return fmt.Errorf("no image %s", id)
	}
	img.DeprecationTime = at
	return nil
}

// DeregisterImage removes an image; launches that name it fail with
// InvalidAMIID.NotFound.
func (f *AWS) DeregisterImage(id string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.images, id)
}

// SetParameter creates or updates an SSM parameter.
func (f *AWS) SetParameter(name, value string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.setParameter(name, value)
}

func (f *AWS) setParameter(name, value string) {
	p, ok := f.parameters[name]
	if !ok {
		p = &parameter{name: name}
		f.parameters[name] = p
	}
	if ok && p.value == value {
		return
	}
	p.value = value
	p.version++
	p.modified = f.now()
}

// DeleteParameter removes an SSM parameter.
func (f *AWS) DeleteParameter(name string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.parameters, name)
}

// Parameter returns an SSM parameter's value.
func (f *AWS) Parameter(name string) (string, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	p, ok := f.parameters[name]
	if !ok {
		return "", false
	}
	return p.value, true
}

// Alias families accepted by ReleaseImage.
const (
	FamilyAL2          = "al2"
	FamilyAL2023       = "al2023"
	FamilyBottlerocket = "bottlerocket"
	FamilyWindows2019  = "windows2019"
	FamilyWindows2022  = "windows2022"
	FamilyWindows2025  = "windows2025"
)

// ReleaseImage publishes a new EKS-optimized image the way AWS does: it
// registers the AMI (owned by Amazon) and points the family's SSM parameters
// for (k8sVersion, arch, variant) at it — the mutable recommended/latest path
// that alias "<family>@latest" reads, and the pinned path of
// img.ReleaseVersion that "<family>@<version>" reads (Windows has none).
//
// family is an alias family (al2, al2023, bottlerocket, windows2019/2022/2025);
// arch is x86_64 or arm64 (amd64 accepted); variant is standard, nvidia or
// neuron for al2023, standard or nvidia for Bottlerocket, standard or gpu for
// AL2, and empty or standard for Windows. It returns the registered image.
func (f *AWS) ReleaseImage(family, k8sVersion, arch, variant string, img Image) (Image, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	arch = normalizeArch(arch)
	if img.Architecture != "" && normalizeArch(img.Architecture) != arch {
		return Image{}, fmt.Errorf("image architecture %s does not match release architecture %s", img.Architecture, arch)
	}
	img.Architecture = arch
	if variant == "" {
		variant = "standard"
	}
	if img.CreationDate.IsZero() {
		img.CreationDate = f.now()
	}
	if img.ReleaseVersion == "" {
		img.ReleaseVersion = "v" + img.CreationDate.Format("20060102")
	}
	if img.OwnerID == "" {
		img.OwnerID = AmazonOwnerID
	}
	if img.OwnerAlias == "" && img.OwnerID == AmazonOwnerID {
		img.OwnerAlias = "amazon"
	}
	paths, name, err := releasePaths(family, k8sVersion, arch, variant, img.ReleaseVersion, img.CreationDate)
	if err != nil {
		return Image{}, err
	}
	if img.Name == "" {
		img.Name = name
	}
	img.Windows = strings.HasPrefix(family, "windows")
	registered, err := f.addImage(img, AmazonOwnerID)
	if err != nil {
		return Image{}, err
	}
	for _, p := range paths {
		f.setParameter(p, registered.ID)
	}
	return registered, nil
}

// LatestImageParameter returns the SSM path that alias <family>@latest reads
// for the given Kubernetes version, architecture and variant.
func LatestImageParameter(family, k8sVersion, arch, variant string) (string, error) {
	if variant == "" {
		variant = "standard"
	}
	paths, _, err := releasePaths(family, k8sVersion, normalizeArch(arch), variant, "v0", time.Time{})
	if err != nil {
		return "", err
	}
	return paths[0], nil
}

// releasePaths returns the SSM paths an image release updates (the mutable
// path first) and the image's default name.
func releasePaths(family, k8s, arch, variant, version string, created time.Time) ([]string, string, error) {
	bad := func() ([]string, string, error) {
		return nil, "", fmt.Errorf("family %s has no %s/%s variant", family, arch, variant)
	}
	switch family {
	case FamilyAL2:
		dir, node := "amazon-linux-2", "amazon-eks-node"
		switch {
		case variant == "standard" && arch == "arm64":
			dir, node = "amazon-linux-2-arm64", "amazon-eks-arm64-node"
		case variant == "gpu" && arch == "x86_64":
			dir, node = "amazon-linux-2-gpu", "amazon-eks-gpu-node"
		case variant == "standard" && arch == "x86_64":
		default:
			return bad()
		}
		base := "/aws/service/eks/optimized-ami/" + k8s + "/" + dir
		pinned := fmt.Sprintf("%s-%s-%s", node, k8s, version)
		return []string{base + "/recommended/image_id", base + "/" + pinned + "/image_id"}, pinned, nil
	case FamilyAL2023:
		switch {
		case variant == "standard", variant == "nvidia", variant == "neuron" && arch == "x86_64":
		default:
			return bad()
		}
		base := fmt.Sprintf("/aws/service/eks/optimized-ami/%s/amazon-linux-2023/%s/%s", k8s, arch, variant)
		pinned := fmt.Sprintf("amazon-eks-node-al2023-%s-%s-%s-%s", arch, variant, k8s, version)
		return []string{base + "/recommended/image_id", base + "/" + pinned + "/image_id"}, pinned, nil
	case FamilyBottlerocket:
		flavor := "aws-k8s-" + k8s
		switch variant {
		case "standard":
		case "nvidia":
			flavor += "-nvidia"
		default:
			return bad()
		}
		base := "/aws/service/bottlerocket/" + flavor + "/" + arch
		v := strings.TrimPrefix(version, "v")
		name := fmt.Sprintf("bottlerocket-%s-%s-v%s-%s", flavor, arch, v, created.Format("20060102"))
		return []string{base + "/latest/image_id", base + "/" + v + "/image_id"}, name, nil
	case FamilyWindows2019, FamilyWindows2022, FamilyWindows2025:
		if arch != "x86_64" || variant != "standard" {
			return bad()
		}
		year := strings.TrimPrefix(family, "windows")
		name := fmt.Sprintf("Windows_Server-%s-English-Core-EKS_Optimized-%s", year, k8s)
		return []string{"/aws/service/ami-windows-latest/" + name + "/image_id"}, name + "-" + created.Format("2006.01.02"), nil
	}
	return nil, "", fmt.Errorf("unknown alias family %q", family)
}

// DescribeImages implements sdk.EC2.
func (f *AWS) DescribeImages(_ context.Context, in *ec2.DescribeImagesInput, _ ...func(*ec2.Options)) (*ec2.DescribeImagesOutput, error) {
	const api = "DescribeImages"
	unlock, err := f.lock(api, in)
	defer unlock()
	if err != nil {
		return nil, err
	}
	if in == nil {
		in = &ec2.DescribeImagesInput{}
	}
	if err := f.dryRun(api, in.DryRun); err != nil {
		return nil, err
	}
	if err := checkFilters(api, in.Filters, "image-id", "name", "owner-id", "owner-alias", "state", "architecture", "is-public", "description", "image-type", "platform"); err != nil {
		return nil, err
	}
	for _, id := range in.ImageIds {
		if !strings.HasPrefix(id, "ami-") {
			return nil, ec2Error(api, "InvalidAMIID.Malformed", "Invalid id: \"%s\" (expecting \"ami-...\")", id)
		}
		if _, ok := f.images[id]; !ok {
			return nil, ec2Error(api, "InvalidAMIID.NotFound", "The image id '[%s]' does not exist", id)
		}
	}
	now := f.now()
	var out []ec2types.Image
	for _, id := range sortedKeys(f.images) {
		img := f.images[id]
		if len(in.ImageIds) > 0 && !contains(in.ImageIds, id) {
			continue
		}
		if len(in.Owners) > 0 && !f.ownerMatches(img, in.Owners) {
			continue
		}
		if img.deprecated(now) && !deref(in.IncludeDeprecated) && img.OwnerID != f.opts.AccountID {
			continue
		}
		attr := func(name string) []string {
			switch name {
			case "image-id":
				return one(img.ID)
			case "name":
				return one(img.Name)
			case "owner-id":
				return one(img.OwnerID)
			case "owner-alias":
				return one(img.OwnerAlias)
			case "state":
				return one(img.State)
			case "architecture":
				return one(img.Architecture)
			case "is-public":
				return one(fmt.Sprint(img.OwnerID != f.opts.AccountID))
			case "description":
				return one(img.Description)
			case "image-type":
				return one("machine")
			case "platform":
				if img.Windows {
					return one("windows")
				}
			}
			return nil
		}
		if !matchFilters(in.Filters, img.Tags, attr) {
			continue
		}
		out = append(out, f.imageOutput(img))
	}
	page, next, err := paginate(api, out, in.NextToken, in.MaxResults, pageSpec{min: 6, max: 1000})
	if err != nil {
		return nil, err
	}
	return &ec2.DescribeImagesOutput{Images: page, NextToken: next}, nil
}

func (f *AWS) ownerMatches(img *image, owners []string) bool {
	for _, o := range owners {
		switch {
		case o == "self" && img.OwnerID == f.opts.AccountID:
			return true
		case o == img.OwnerID, img.OwnerAlias != "" && o == img.OwnerAlias:
			return true
		}
	}
	return false
}

func (f *AWS) imageOutput(img *image) ec2types.Image {
	out := ec2types.Image{
		ImageId:            ptr(img.ID),
		Name:               ptr(img.Name),
		OwnerId:            ptr(img.OwnerID),
		Architecture:       ec2types.ArchitectureValues(img.Architecture),
		CreationDate:       ptr(img.CreationDate.UTC().Format(ec2Time)),
		State:              ec2types.ImageState(img.State),
		Public:             ptr(img.OwnerID != f.opts.AccountID),
		ImageType:          ec2types.ImageTypeValuesMachine,
		RootDeviceName:     ptr("/dev/xvda"),
		RootDeviceType:     ec2types.DeviceTypeEbs,
		VirtualizationType: ec2types.VirtualizationTypeHvm,
		Hypervisor:         ec2types.HypervisorTypeXen,
		EnaSupport:         ptr(true),
		PlatformDetails:    ptr("Linux/UNIX"),
		Tags:               mapToTags(img.Tags),
		BlockDeviceMappings: []ec2types.BlockDeviceMapping{{
			DeviceName: ptr("/dev/xvda"),
			Ebs: &ec2types.EbsBlockDevice{
				DeleteOnTermination: ptr(true),
				SnapshotId:          ptr("snap-" + img.ID[len("ami-"):]),
				VolumeSize:          ptr(int32(20)),
				VolumeType:          ec2types.VolumeTypeGp3,
				Encrypted:           ptr(false),
			},
		}},
	}
	if img.Description != "" {
		out.Description = ptr(img.Description)
	}
	if img.OwnerAlias != "" {
		out.ImageOwnerAlias = ptr(img.OwnerAlias)
	}
	if !img.DeprecationTime.IsZero() {
		out.DeprecationTime = ptr(img.DeprecationTime.UTC().Format(ec2Time))
	}
	if img.Windows {
		out.Platform = ec2types.PlatformValuesWindows
		out.PlatformDetails = ptr("Windows")
		out.RootDeviceName = ptr("/dev/sda1")
		out.BlockDeviceMappings[0].DeviceName = ptr("/dev/sda1")
	}
	return out
}

// GetParameter implements sdk.SSM.
func (f *AWS) GetParameter(_ context.Context, in *ssm.GetParameterInput, _ ...func(*ssm.Options)) (*ssm.GetParameterOutput, error) {
	const api = "GetParameter"
	unlock, err := f.lock(api, in)
	defer unlock()
	if err != nil {
		return nil, err
	}
	name := ""
	if in != nil {
		name = deref(in.Name)
	}
	if name == "" {
		return nil, newAPIError(svcSSM, api, "ValidationException", "1 validation error detected: Value null at 'name' failed to satisfy constraint: Member must not be null", 400)
	}
	p, ok := f.parameters[name]
	if !ok {
		return nil, typed(svcSSM, api, &ssmtypes.ParameterNotFound{})
	}
	arnName := strings.TrimPrefix(p.name, "/")
	return &ssm.GetParameterOutput{Parameter: &ssmtypes.Parameter{
		Name:             ptr(p.name),
		Value:            ptr(p.value),
		Type:             ssmtypes.ParameterTypeString,
		DataType:         ptr("text"),
		Version:          p.version,
		LastModifiedDate: ptr(p.modified),
		ARN:              ptr(fmt.Sprintf("arn:aws:ssm:%s::parameter/%s", f.opts.Region, arnName)),
	}}, nil
}
