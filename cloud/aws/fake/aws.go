// Package fake is an in-memory AWS: EC2, SSM, SQS, IAM, EKS, EventBridge and
// the Price List API, as far as the AWS provider and `stevedore diagnose` use
// them (see package sdk for the exact list of calls).
//
// One *AWS value implements every interface of package sdk over a single world
// held in memory, so the provider that runs in production runs unchanged in
// tests and in the simulator. The world is deterministic: time comes from an
// injected clock, every identifier and every random choice comes from a source
// seeded by Options.Seed, and no reply depends on map iteration order. The same
// seed and the same sequence of calls give the same world.
//
// Time-driven behaviour (instances going from pending to running, from
// shutting-down to terminated, insufficient-capacity windows ending, SQS
// visibility timeouts) is evaluated lazily against the clock at every call, so
// a passive clock is enough and no goroutine runs behind the caller's back.
//
// The fake answers with the SDK's own output types and with errors shaped like
// the real clients' errors (a *smithy.OperationError wrapping an HTTP response
// error wrapping the API error, typed where the SDK has a type), so code that
// inspects errors with errors.As and smithy.APIError behaves the same. The SDK's
// paginators accept it as a client. What the fake does not run is the SDK's
// middleware: there are no retries, no request signing and no serialization.
// TestContractMoto sends every call of package sdk, with the same starting
// state, to the fake and to moto, an AWS emulator written by others, and
// compares what the provider reads of the answers; docs/aws.md lists the
// verdicts where the two differ.
//
// Every reply is built anew, so a caller that changes what it was given
// changes no later reply, with one exception: DescribeInstanceTypes hands
// out copies of one description per type that share their nested values
// (the catalog does not change while the fake runs, and describing it anew
// every few minutes was a good part of a simulated day). Treat those, as
// the provider does, as read-only.
//
// Fault injection: InjectError and Throttle make an API fail a number of times,
// InjectErrorUntil until a time (Operations names the APIs they take);
// DenyAction, DenyPassRole and the capacity controls (SetCapacity,
// InjectInsufficientCapacity, subnet free addresses) reproduce the ways real
// clusters fail. Calls counts every call per API.
package fake

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"k8s.io/utils/clock"

	"github.com/stevedore-autoscaler/stevedore/cloud/aws/iampolicy"
	"github.com/stevedore-autoscaler/stevedore/cloud/aws/sdk"
)

// Defaults used when the corresponding Options field is zero.
const (
	DefaultRegion              = "us-east-1"
	DefaultAccountID           = "123456789012"
	DefaultBootDelay           = 30 * time.Second
	DefaultShutdownDelay       = 30 * time.Second
	DefaultTerminatedRetention = time.Hour
	DefaultSpotFraction        = 0.35
	// DefaultVPCID is the VPC that subnets and security groups belong to
	// unless they name another.
	DefaultVPCID = "vpc-0a1b2c3d4e5f60718"
	// AmazonOwnerID is the account that owns the AMIs registered by
	// ReleaseImage (the EKS optimized AMI account); their owner alias is
	// "amazon".
	AmazonOwnerID = "602401143452"
	// SpotInterruptionNotice is the time between a spot interruption warning
	// and the instance's termination.
	SpotInterruptionNotice = 2 * time.Minute
)

// Options configures a fake AWS. Zero values take the defaults above; a
// negative duration means "no delay".
type Options struct {
	// Seed seeds every identifier and random choice.
	Seed uint64
	// Clock drives all time-dependent behaviour. Default: the real clock.
	Clock clock.PassiveClock
	// Region, AccountID: default us-east-1 and 123456789012.
	Region    string
	AccountID string
	// Zones are the availability zone names. Default: <region>a, b and c.
	Zones []string
	// InstanceTypes restricts the catalog served by DescribeInstanceTypes and
	// offerings to the named types. Default: the whole embedded catalog.
	InstanceTypes []string
	// BootDelay is how long an instance stays pending. Default 30s.
	BootDelay time.Duration
	// ShutdownDelay is how long an instance stays shutting-down. Default 30s.
	ShutdownDelay time.Duration
	// TerminatedRetention is how long a terminated instance stays visible to
	// DescribeInstances. Default 1h.
	TerminatedRetention time.Duration
	// SpotFraction is the default spot price as a fraction of the on-demand
	// price (before a small per-zone variation). Default 0.35.
	SpotFraction float64
	// IAMPropagationDelay is how long a new instance profile is not yet
	// usable by EC2 launches (IAM is eventually consistent). Default none.
	IAMPropagationDelay time.Duration
	// EventQueue, when set, names an SQS queue that receives an
	// "EC2 Instance State-change Notification" for every instance state
	// transition, as an EventBridge rule would deliver it. The queue must
	// exist (CreateQueue) for events to be delivered.
	EventQueue string
	// CallerARN is the identity the controller runs as; it appears in
	// authorization failure messages.
	CallerARN string
}

// AWS is the in-memory AWS. Create it with New. It is safe for concurrent use.
type AWS struct {
	mu   sync.Mutex
	opts Options
	clk  clock.PassiveClock
	rng  *rand.Rand
	seq  int64

	zones []zoneInfo

	subnets         map[string]*subnet
	securityGroups  map[string]*securityGroup
	images          map[string]*image
	parameters      map[string]*parameter
	types           []typeEntry
	typeIndex       map[string]int
	offeringRemoved map[offeringKey]bool
	spotPrices      map[offeringKey]priceRecord
	onDemandPrices  map[string]float64
	products        map[string]*product // Price List products, rendered once per price
	listings        map[string]*listing // paginated catalog reads, by API and request
	catalogVersion  uint64              // moves when prices or offerings change
	capacity        map[poolKey]int
	iceRules        []iceRule
	reservations    map[string]*capacityReservation
	// placementGroups by ID; nil until the first is added.
	placementGroups map[string]*PlacementGroup
	launchTemplates map[string]*launchTemplate
	instances       map[string]*instance
	// order lists the instances in launch order; those deleted from
	// instances are dropped from it lazily, by orderedInstances.
	order []*instance
	// due is the earliest time at which an instance's state changes by
	// itself (see advance; never when nothing is scheduled); zero when it
	// must be found again, after a launch or a termination. Every call
	// advances the world, and most find nothing due: without it each
	// looked at every instance.
	due time.Time

	roles         map[string]*role
	profiles      map[string]*instanceProfile
	passRoleAll   bool
	passRoleAllow map[string]bool
	passRoleDeny  map[string]bool
	deniedActions map[string]bool
	// policy, when set, is enforced on every call; denials lists what it
	// refused.
	policy   atomic.Pointer[iampolicy.Policy]
	denials  []string
	clusters map[string]*cluster
	// zonalShifts are the ARC zonal shifts started on clusters, in start
	// order; expired and cancelled ones stay, marked so.
	zonalShifts   []*zonalShift
	queues        map[string]*queue
	rules         map[string]*Rule
	faults        map[string][]*fault
	calls         map[string]int
	pendingEvents []stateEvent
}

// New returns an empty world: a region with its zones and the instance-type
// catalog, and nothing else. Add subnets, security groups, images, roles, a
// cluster and queues with the helper methods, or call StandardCluster.
func New(opts Options) *AWS {
	if opts.Region == "" {
		opts.Region = DefaultRegion
	}
	if opts.AccountID == "" {
		opts.AccountID = DefaultAccountID
	}
	if len(opts.Zones) == 0 {
		opts.Zones = []string{opts.Region + "a", opts.Region + "b", opts.Region + "c"}
	}
	if opts.Clock == nil {
		opts.Clock = clock.RealClock{}
	}
	opts.BootDelay = defaultDuration(opts.BootDelay, DefaultBootDelay)
	opts.ShutdownDelay = defaultDuration(opts.ShutdownDelay, DefaultShutdownDelay)
	opts.TerminatedRetention = defaultDuration(opts.TerminatedRetention, DefaultTerminatedRetention)
	opts.IAMPropagationDelay = defaultDuration(opts.IAMPropagationDelay, 0)
	if opts.SpotFraction <= 0 {
		opts.SpotFraction = DefaultSpotFraction
	}
	if opts.CallerARN == "" {
		opts.CallerARN = fmt.Sprintf("arn:aws:sts::%s:assumed-role/stevedore-controller/controller", opts.AccountID)
	}
	f := &AWS{
		opts:            opts,
		clk:             opts.Clock,
		rng:             rand.New(rand.NewPCG(opts.Seed, opts.Seed^0x9e3779b97f4a7c15)),
		subnets:         map[string]*subnet{},
		securityGroups:  map[string]*securityGroup{},
		images:          map[string]*image{},
		parameters:      map[string]*parameter{},
		offeringRemoved: map[offeringKey]bool{},
		spotPrices:      map[offeringKey]priceRecord{},
		onDemandPrices:  map[string]float64{},
		capacity:        map[poolKey]int{},
		reservations:    map[string]*capacityReservation{},
		launchTemplates: map[string]*launchTemplate{},
		instances:       map[string]*instance{},
		roles:           map[string]*role{},
		profiles:        map[string]*instanceProfile{},
		passRoleAll:     true,
		passRoleAllow:   map[string]bool{},
		passRoleDeny:    map[string]bool{},
		deniedActions:   map[string]bool{},
		clusters:        map[string]*cluster{},
		queues:          map[string]*queue{},
		faults:          map[string][]*fault{},
		calls:           map[string]int{},
	}
	for i, z := range opts.Zones {
		f.zones = append(f.zones, zoneInfo{name: z, id: fmt.Sprintf("%s-az%d", regionShortName(opts.Region), i+1)})
	}
	f.loadCatalog(opts.InstanceTypes)
	return f
}

func defaultDuration(d, def time.Duration) time.Duration {
	switch {
	case d < 0:
		return 0
	case d == 0:
		return def
	}
	return d
}

// Clients returns the fake as every client of sdk.Clients.
func (f *AWS) Clients() sdk.Clients {
	return sdk.Clients{EC2: f, SSM: f, SQS: f, IAM: f, EKS: f, Pricing: f, EventBridge: f, ARCZonalShift: f}
}

// Region returns the fake's region.
func (f *AWS) Region() string { return f.opts.Region }

// AccountID returns the fake's account ID.
func (f *AWS) AccountID() string { return f.opts.AccountID }

// Zones returns the zone names, in order.
func (f *AWS) Zones() []string { return append([]string(nil), f.opts.Zones...) }

// ZoneID returns the zone ID of a zone name ("use1-az1" for "us-east-1a").
func (f *AWS) ZoneID(zone string) (string, bool) {
	for _, z := range f.zones {
		if z.name == zone {
			return z.id, true
		}
	}
	return "", false
}

// regionShortName abbreviates a region the way zone IDs do: us-east-1 → use1,
// ap-southeast-2 → apse2.
func regionShortName(region string) string {
	parts := strings.Split(region, "-")
	if len(parts) < 3 {
		return strings.ReplaceAll(region, "-", "")
	}
	var b strings.Builder
	b.WriteString(parts[0])
	for _, p := range parts[1 : len(parts)-1] {
		switch {
		case strings.HasPrefix(p, "north") && len(p) > 5:
			b.WriteString("n" + p[5:6])
		case strings.HasPrefix(p, "south") && len(p) > 5:
			b.WriteString("s" + p[5:6])
		default:
			b.WriteString(p[:1])
		}
	}
	b.WriteString(parts[len(parts)-1])
	return b.String()
}

type zoneInfo struct{ name, id string }

func (f *AWS) zoneID(zone string) string {
	id, _ := f.ZoneID(zone)
	return id
}

func (f *AWS) hasZone(zone string) bool {
	_, ok := f.ZoneID(zone)
	return ok
}

func (f *AWS) now() time.Time { return f.clk.Now().UTC() }

// hex returns n lowercase hex digits from the seeded source.
func (f *AWS) hex(n int) string {
	const digits = "0123456789abcdef"
	b := make([]byte, n)
	for i := range b {
		b[i] = digits[f.rng.IntN(16)]
	}
	return string(b)
}

func (f *AWS) upperAlnum(n int) string {
	const digits = "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
	b := make([]byte, n)
	for i := range b {
		b[i] = digits[f.rng.IntN(len(digits))]
	}
	return string(b)
}

// uuid returns a version-4-shaped UUID from the seeded source.
func (f *AWS) uuid() string {
	h := f.hex(32)
	return h[0:8] + "-" + h[8:12] + "-4" + h[13:16] + "-a" + h[17:20] + "-" + h[20:32]
}

func (f *AWS) nextSeq() int64 {
	f.seq++
	return f.seq
}

// fault is one injected failure.
type fault struct {
	err       error
	remaining int // <0: forever (or until until)
	// until, when set, ends the fault: calls at or after it are not failed.
	until time.Time
}

// InjectError makes the next times calls to api (an operation name such as
// "CreateFleet" or "GetParameter") fail with err; times < 0 means until
// ClearErrors. An err that is not already a *smithy.OperationError is wrapped
// like the real client wraps errors. Use APIError to build an error with a code.
// Injected errors queue: the first injection is used up first.
func (f *AWS) InjectError(api string, err error, times int) {
	if times == 0 {
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.faults[api] = append(f.faults[api], &fault{err: err, remaining: times})
}

// InjectErrorUntil makes every call to api fail with err until the clock
// reaches until (calls at until succeed), as a service outage or a
// throttled window does. It queues with InjectError's injections.
func (f *AWS) InjectErrorUntil(api string, err error, until time.Time) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if !f.now().Before(until) {
		return
	}
	f.faults[api] = append(f.faults[api], &fault{err: err, remaining: -1, until: until})
}

// Throttle makes the next times calls to api fail with the service's throttling
// error: RequestLimitExceeded for EC2, ThrottlingException (or the service's own
// code) elsewhere.
func (f *AWS) Throttle(api string, times int) {
	f.InjectError(api, ThrottlingError(api), times)
}

// ClearErrors removes every injected error.
func (f *AWS) ClearErrors() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.faults = map[string][]*fault{}
}

// Calls returns how many times api was called (including failed calls).
func (f *AWS) Calls(api string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.calls[api]
}

// CallCounts returns a copy of every API's call count.
func (f *AWS) CallCounts() map[string]int {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := make(map[string]int, len(f.calls))
	for k, v := range f.calls {
		out[k] = v
	}
	return out
}

// ResetCalls sets every call count to zero.
func (f *AWS) ResetCalls() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = map[string]int{}
}

// DenyAction makes the controller's identity lack an IAM action, given as
// "service:Operation" (for example "ec2:CreateFleet", "ssm:GetParameter").
// Calls fail with the service's authorization error; EC2 dry runs answer
// UnauthorizedOperation.
func (f *AWS) DenyAction(action string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.deniedActions[strings.ToLower(action)] = true
}

// AllowAction undoes DenyAction.
func (f *AWS) AllowAction(action string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.deniedActions, strings.ToLower(action))
}

// begin is the prologue of every API call: it advances the world to the
// clock, counts the call and returns an injected or authorization error.
// The caller holds f.mu.
func (f *AWS) begin(api string) error {
	f.advance()
	f.calls[api]++
	q := f.faults[api]
	for len(q) > 0 && !q[0].until.IsZero() && !f.now().Before(q[0].until) {
		q = q[1:]
		f.faults[api] = q
	}
	if len(q) > 0 {
		ft := q[0]
		if ft.remaining > 0 {
			ft.remaining--
			if ft.remaining == 0 {
				f.faults[api] = q[1:]
			}
		}
		return wrapOperationError(serviceOf(api), api, ft.err)
	}
	svc := serviceOf(api)
	if f.deniedActions[strings.ToLower(svc.iamPrefix()+":"+api)] {
		return f.accessDenied(api, svc.iamPrefix()+":"+api, "")
	}
	return nil
}

func (f *AWS) accessDenied(api, action, resource string) error {
	svc := serviceOf(api)
	if resource == "" {
		resource = "*"
	}
	msg := fmt.Sprintf("User: %s is not authorized to perform: %s on resource: %s because no identity-based policy allows the %s action", f.opts.CallerARN, action, resource, action)
	switch svc.id {
	case "EC2":
		return newAPIError(svc, api, "UnauthorizedOperation", "You are not authorized to perform this operation. "+msg+". Encoded authorization failure message: "+f.hex(48), 403)
	case "IAM", "SQS":
		return newAPIError(svc, api, "AccessDenied", msg, 403)
	default:
		return newAPIError(svc, api, "AccessDeniedException", msg, 400)
	}
}

// lock takes the world's lock and runs begin, then checks the call
// against the enforced policy (EnforcePolicy); on error the lock is
// released. in is the call's input.
func (f *AWS) lock(api string, in any) (unlock func(), err error) {
	var refused []iampolicy.Request
	if pol := f.policy.Load(); pol != nil && !injection(api) {
		// The authorizations are expanded before the lock is taken: they
		// read resource tags through Authorization, which takes it.
		for _, r := range f.Authorization().Requests(serviceOf(api).name(), api, in) {
			if _, ok := pol.Allows(r); !ok {
				refused = append(refused, r)
			}
		}
	}
	f.mu.Lock()
	if err := f.begin(api); err != nil {
		f.mu.Unlock()
		return func() {}, err
	}
	if len(refused) > 0 {
		for _, r := range refused {
			f.denials = append(f.denials, api+": "+r.Action+" on "+r.Resource)
		}
		err := f.accessDenied(api, refused[0].Action, refused[0].Resource)
		f.mu.Unlock()
		return func() {}, err
	}
	return f.mu.Unlock, nil
}

// injection reports whether api is one that only the world calls (an
// interruption message sent to the queue): the policy enforced is the
// controller's, and the world is another identity.
func injection(api string) bool {
	c, ok := iampolicy.Lookup(serviceOf(api).name(), api)
	return ok && c.Caller == iampolicy.CallerInjection
}

// EnforcePolicy makes every later call pass pol, as AWS evaluates the
// caller's identity-based policy: a call any of whose authorizations pol
// refuses (see iampolicy.Account.Requests) fails with the service's
// authorization error and is listed by Denials. Nil stops enforcing.
// Tests give it the policy users attach to the controller, Karpenter's
// among them, to show that every call the controller makes is allowed.
func (f *AWS) EnforcePolicy(pol *iampolicy.Policy) {
	f.policy.Store(pol)
}

// KarpenterPolicy is Karpenter's reference controller policy
// (iampolicy.KarpenterReference) for a cluster of this account and its
// interruption queue: what a user who followed Karpenter's getting-started
// guide attached to the controller's role. Like that guide's template, it
// lets the controller pass the node role KarpenterNodeRole-<cluster> only.
func (f *AWS) KarpenterPolicy(cluster, queue string) iampolicy.Policy {
	return iampolicy.KarpenterReference("aws", f.opts.Region, f.opts.AccountID, cluster,
		f.roleARN("KarpenterNodeRole-"+cluster), f.QueueARN(queue))
}

// Denials returns the authorizations the enforced policy refused, in call
// order, as "Operation: action on resource".
func (f *AWS) Denials() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.denials)
}

// DenialSummary returns each distinct refusal of Denials once, sorted, with
// how often it happened: "Operation: action on resource (n times)".
func (f *AWS) DenialSummary() []string {
	counts := map[string]int{}
	for _, d := range f.Denials() {
		counts[d]++
	}
	out := make([]string, 0, len(counts))
	for _, d := range sortedKeys(counts) {
		out = append(out, fmt.Sprintf("%s (%d times)", d, counts[d]))
	}
	return out
}

// clone deep-copies SDK values through JSON; the SDK types are plain data.
func clone[T any](v T) T {
	b, err := json.Marshal(v)
	if err != nil {
		panic(fmt.Sprintf("fake: cloning %T: %v", v, err))
	}
	var out T
	if err := json.Unmarshal(b, &out); err != nil {
		panic(fmt.Sprintf("fake: cloning %T: %v", v, err))
	}
	return out
}

func sortedKeys[M ~map[string]V, V any](m M) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

func ptr[T any](v T) *T { return &v }

func deref[T any](p *T) T {
	var zero T
	if p == nil {
		return zero
	}
	return *p
}
