package fake

import (
	"context"
	"encoding/base64"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/iam"
	iamtypes "github.com/aws/aws-sdk-go-v2/service/iam/types"
)

type role struct {
	name, path, id, arn string
	created             time.Time
}

type instanceProfile struct {
	name, path, id, arn string
	created             time.Time
	roles               []string
	tags                map[string]string
}

// AddRole creates an IAM role (path "/") and returns its ARN. The controller
// may pass it (iam:PassRole) unless DenyPassRole or RestrictPassRole say
// otherwise.
func (f *AWS) AddRole(name string) string {
	f.mu.Lock()
	defer f.mu.Unlock()
	if r, ok := f.roles[name]; ok {
		return r.arn
	}
	r := &role{name: name, path: "/", id: "AROA" + f.upperAlnum(17), arn: f.roleARN(name), created: f.now()}
	f.roles[name] = r
	return r.arn
}

func (f *AWS) roleARN(name string) string {
	return fmt.Sprintf("arn:aws:iam::%s:role/%s", f.opts.AccountID, name)
}

// DenyPassRole removes iam:PassRole on a role from the controller's
// permissions: launches whose instance profile carries the role fail with
// UnauthorizedOperation.
func (f *AWS) DenyPassRole(roleName string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.passRoleDeny[roleName] = true
}

// AllowPassRole grants iam:PassRole on a role.
func (f *AWS) AllowPassRole(roleName string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.passRoleDeny, roleName)
	f.passRoleAllow[roleName] = true
}

// RestrictPassRole limits iam:PassRole to exactly the named roles (by default
// every role may be passed).
func (f *AWS) RestrictPassRole(roleNames ...string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.passRoleAll = false
	f.passRoleAllow = map[string]bool{}
	for _, r := range roleNames {
		f.passRoleAllow[r] = true
	}
}

// CanPassRole reports whether the controller may pass the role.
func (f *AWS) CanPassRole(roleName string) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.canPassRole(roleName)
}

func (f *AWS) canPassRole(roleName string) bool {
	return !f.passRoleDeny[roleName] && (f.passRoleAll || f.passRoleAllow[roleName])
}

// AddInstanceProfile creates an instance profile carrying role (which must
// exist; empty for none), as a user would for spec.instanceProfile.
func (f *AWS) AddInstanceProfile(name, roleName string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if _, ok := f.profiles[name]; ok {
		return fmt.Errorf("instance profile %s already exists", name)
	}
	p := f.newProfile(name, "/", nil)
	if roleName != "" {
		if _, ok := f.roles[roleName]; !ok {
			return fmt.Errorf("no role %s", roleName)
		}
		p.roles = []string{roleName}
	}
	f.profiles[name] = p
	return nil
}

func (f *AWS) newProfile(name, path string, tags map[string]string) *instanceProfile {
	return &instanceProfile{
		name: name, path: path, id: "AIPA" + f.upperAlnum(17),
		arn:     fmt.Sprintf("arn:aws:iam::%s:instance-profile%s%s", f.opts.AccountID, path, name),
		created: f.now(), tags: copyMap(tags),
	}
}

// InstanceProfileRoles returns the roles of an instance profile.
func (f *AWS) InstanceProfileRoles(name string) ([]string, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	p, ok := f.profiles[name]
	if !ok {
		return nil, false
	}
	return append([]string(nil), p.roles...), true
}

// passRoleError returns the error a launch gets when its instance profile
// cannot be used: the profile does not exist (or has not propagated yet), or
// the controller may not pass its role.
func (f *AWS) passRoleError(profileName string) (code, message string) {
	p, ok := f.profiles[profileName]
	if !ok || f.now().Before(p.created.Add(f.opts.IAMPropagationDelay)) {
		return "InvalidParameterValue", fmt.Sprintf("Value (%s) for parameter iamInstanceProfile.name is invalid. Invalid IAM Instance Profile name", profileName)
	}
	for _, r := range p.roles {
		if !f.canPassRole(r) {
			action := "iam:PassRole"
			return "UnauthorizedOperation", fmt.Sprintf("You are not authorized to perform this operation. User: %s is not authorized to perform: %s on resource: %s because no identity-based policy allows the %s action. Encoded authorization failure message: %s",
				f.opts.CallerARN, action, f.roleARN(r), action, f.hex(48))
		}
	}
	return "", ""
}

func profileNameFromARN(arn string) string {
	if i := strings.LastIndex(arn, "/"); i >= 0 {
		return arn[i+1:]
	}
	return arn
}

func (f *AWS) roleOutput(name string) iamtypes.Role {
	r := f.roles[name]
	return iamtypes.Role{
		RoleName: ptr(r.name), Arn: ptr(r.arn), RoleId: ptr(r.id), Path: ptr(r.path), CreateDate: ptr(r.created),
		AssumeRolePolicyDocument: ptr(`%7B%22Version%22%3A%222012-10-17%22%2C%22Statement%22%3A%5B%7B%22Effect%22%3A%22Allow%22%2C%22Principal%22%3A%7B%22Service%22%3A%22ec2.amazonaws.com%22%7D%2C%22Action%22%3A%22sts%3AAssumeRole%22%7D%5D%7D`),
		MaxSessionDuration:       ptr(int32(3600)),
	}
}

func (f *AWS) profileOutput(p *instanceProfile) *iamtypes.InstanceProfile {
	out := &iamtypes.InstanceProfile{
		InstanceProfileName: ptr(p.name), InstanceProfileId: ptr(p.id), Arn: ptr(p.arn), Path: ptr(p.path),
		CreateDate: ptr(p.created), Roles: []iamtypes.Role{},
	}
	for _, r := range p.roles {
		out.Roles = append(out.Roles, f.roleOutput(r))
	}
	for _, k := range sortedKeys(p.tags) {
		out.Tags = append(out.Tags, iamtypes.Tag{Key: ptr(k), Value: ptr(p.tags[k])})
	}
	return out
}

func noSuchProfile(api, name string) error {
	return typed(svcIAM, api, &iamtypes.NoSuchEntityException{Message: ptr(fmt.Sprintf("Instance Profile %s cannot be found.", name))})
}

func noSuchRole(api, name string) error {
	return typed(svcIAM, api, &iamtypes.NoSuchEntityException{Message: ptr(fmt.Sprintf("The role with name %s cannot be found.", name))})
}

// GetInstanceProfile implements sdk.IAM.
func (f *AWS) GetInstanceProfile(_ context.Context, in *iam.GetInstanceProfileInput, _ ...func(*iam.Options)) (*iam.GetInstanceProfileOutput, error) {
	const api = "GetInstanceProfile"
	unlock, err := f.lock(api, in)
	defer unlock()
	if err != nil {
		return nil, err
	}
	name := deref(in.InstanceProfileName)
	p, ok := f.profiles[name]
	if !ok {
		return nil, noSuchProfile(api, name)
	}
	return &iam.GetInstanceProfileOutput{InstanceProfile: f.profileOutput(p)}, nil
}

// CreateInstanceProfile implements sdk.IAM.
func (f *AWS) CreateInstanceProfile(_ context.Context, in *iam.CreateInstanceProfileInput, _ ...func(*iam.Options)) (*iam.CreateInstanceProfileOutput, error) {
	const api = "CreateInstanceProfile"
	unlock, err := f.lock(api, in)
	defer unlock()
	if err != nil {
		return nil, err
	}
	name := deref(in.InstanceProfileName)
	if name == "" || len(name) > 128 {
		return nil, typed(svcIAM, api, &iamtypes.InvalidInputException{Message: ptr("1 validation error detected: Value at 'instanceProfileName' failed to satisfy constraint: Member must have length between 1 and 128")})
	}
	if _, ok := f.profiles[name]; ok {
		return nil, typed(svcIAM, api, &iamtypes.EntityAlreadyExistsException{Message: ptr(fmt.Sprintf("Instance Profile %s already exists.", name))})
	}
	path := deref(in.Path)
	if path == "" {
		path = "/"
	}
	if !strings.HasPrefix(path, "/") || !strings.HasSuffix(path, "/") {
		return nil, typed(svcIAM, api, &iamtypes.InvalidInputException{Message: ptr("The specified value for path is invalid. It must begin and end with / and contain only alphanumeric characters and/or / characters.")})
	}
	tags := map[string]string{}
	for _, t := range in.Tags {
		tags[deref(t.Key)] = deref(t.Value)
	}
	p := f.newProfile(name, path, tags)
	f.profiles[name] = p
	return &iam.CreateInstanceProfileOutput{InstanceProfile: f.profileOutput(p)}, nil
}

// AddRoleToInstanceProfile implements sdk.IAM.
func (f *AWS) AddRoleToInstanceProfile(_ context.Context, in *iam.AddRoleToInstanceProfileInput, _ ...func(*iam.Options)) (*iam.AddRoleToInstanceProfileOutput, error) {
	const api = "AddRoleToInstanceProfile"
	unlock, err := f.lock(api, in)
	defer unlock()
	if err != nil {
		return nil, err
	}
	p, ok := f.profiles[deref(in.InstanceProfileName)]
	if !ok {
		return nil, noSuchProfile(api, deref(in.InstanceProfileName))
	}
	roleName := deref(in.RoleName)
	if _, ok := f.roles[roleName]; !ok {
		return nil, noSuchRole(api, roleName)
	}
	if len(p.roles) > 0 {
		return nil, typed(svcIAM, api, &iamtypes.LimitExceededException{Message: ptr("Cannot exceed quota for InstanceSessionsPerInstanceProfile: 1")})
	}
	p.roles = []string{roleName}
	return &iam.AddRoleToInstanceProfileOutput{}, nil
}

// RemoveRoleFromInstanceProfile implements sdk.IAM.
func (f *AWS) RemoveRoleFromInstanceProfile(_ context.Context, in *iam.RemoveRoleFromInstanceProfileInput, _ ...func(*iam.Options)) (*iam.RemoveRoleFromInstanceProfileOutput, error) {
	const api = "RemoveRoleFromInstanceProfile"
	unlock, err := f.lock(api, in)
	defer unlock()
	if err != nil {
		return nil, err
	}
	p, ok := f.profiles[deref(in.InstanceProfileName)]
	if !ok {
		return nil, noSuchProfile(api, deref(in.InstanceProfileName))
	}
	roleName := deref(in.RoleName)
	if !contains(p.roles, roleName) {
		return nil, noSuchRole(api, roleName)
	}
	var rest []string
	for _, r := range p.roles {
		if r != roleName {
			rest = append(rest, r)
		}
	}
	p.roles = rest
	return &iam.RemoveRoleFromInstanceProfileOutput{}, nil
}

// DeleteInstanceProfile implements sdk.IAM.
func (f *AWS) DeleteInstanceProfile(_ context.Context, in *iam.DeleteInstanceProfileInput, _ ...func(*iam.Options)) (*iam.DeleteInstanceProfileOutput, error) {
	const api = "DeleteInstanceProfile"
	unlock, err := f.lock(api, in)
	defer unlock()
	if err != nil {
		return nil, err
	}
	name := deref(in.InstanceProfileName)
	p, ok := f.profiles[name]
	if !ok {
		return nil, noSuchProfile(api, name)
	}
	if len(p.roles) > 0 {
		return nil, typed(svcIAM, api, &iamtypes.DeleteConflictException{Message: ptr("Cannot delete entity, must remove roles from instance profile first.")})
	}
	delete(f.profiles, name)
	return &iam.DeleteInstanceProfileOutput{}, nil
}

// TagInstanceProfile implements sdk.IAM.
func (f *AWS) TagInstanceProfile(_ context.Context, in *iam.TagInstanceProfileInput, _ ...func(*iam.Options)) (*iam.TagInstanceProfileOutput, error) {
	const api = "TagInstanceProfile"
	unlock, err := f.lock(api, in)
	defer unlock()
	if err != nil {
		return nil, err
	}
	p, ok := f.profiles[deref(in.InstanceProfileName)]
	if !ok {
		return nil, noSuchProfile(api, deref(in.InstanceProfileName))
	}
	for _, t := range in.Tags {
		p.tags[deref(t.Key)] = deref(t.Value)
	}
	return &iam.TagInstanceProfileOutput{}, nil
}

// GetRole implements sdk.IAM.
func (f *AWS) GetRole(_ context.Context, in *iam.GetRoleInput, _ ...func(*iam.Options)) (*iam.GetRoleOutput, error) {
	const api = "GetRole"
	unlock, err := f.lock(api, in)
	defer unlock()
	if err != nil {
		return nil, err
	}
	name := deref(in.RoleName)
	if _, ok := f.roles[name]; !ok {
		return nil, noSuchRole(api, name)
	}
	r := f.roleOutput(name)
	return &iam.GetRoleOutput{Role: &r}, nil
}

// ListInstanceProfiles implements sdk.IAM: the profiles whose path starts
// with PathPrefix (default "/"), by name, MaxItems (1 to 1000, default 100)
// at a time, with Marker the position of the next page and IsTruncated set
// while more follow, as IAM pages its lists.
func (f *AWS) ListInstanceProfiles(_ context.Context, in *iam.ListInstanceProfilesInput, _ ...func(*iam.Options)) (*iam.ListInstanceProfilesOutput, error) {
	const api = "ListInstanceProfiles"
	unlock, err := f.lock(api, in)
	defer unlock()
	if err != nil {
		return nil, err
	}
	size := 100
	if in.MaxItems != nil {
		if size = int(*in.MaxItems); size < 1 || size > 1000 {
			return nil, newAPIError(svcIAM, api, "ValidationError", fmt.Sprintf("1 validation error detected: Value '%d' at 'maxItems' failed to satisfy constraint: Member must have value between 1 and 1000", size), 400)
		}
	}
	prefix := deref(in.PathPrefix)
	if prefix == "" {
		prefix = "/"
	}
	var names []string
	for name, p := range f.profiles {
		if strings.HasPrefix(p.path, prefix) {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	start := 0
	if m := deref(in.Marker); m != "" {
		raw, err := base64.RawURLEncoding.DecodeString(m)
		n, ok := 0, false
		if rest, found := strings.CutPrefix(string(raw), api+":"); err == nil && found {
			n, err = strconv.Atoi(rest)
			ok = err == nil && n >= 0 && n <= len(names)
		}
		if !ok {
			return nil, newAPIError(svcIAM, api, "ValidationError", "Invalid Marker.", 400)
		}
		start = n
	}
	end := min(start+size, len(names))
	out := &iam.ListInstanceProfilesOutput{InstanceProfiles: []iamtypes.InstanceProfile{}}
	for _, name := range names[start:end] {
		out.InstanceProfiles = append(out.InstanceProfiles, *f.profileOutput(f.profiles[name]))
	}
	if end < len(names) {
		out.IsTruncated = true
		out.Marker = ptr(base64.RawURLEncoding.EncodeToString(fmt.Appendf(nil, "%s:%d", api, end)))
	}
	return out, nil
}
