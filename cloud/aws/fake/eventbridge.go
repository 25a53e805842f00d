package fake

import (
	"context"
	"fmt"
	"slices"
	"strconv"

	"github.com/aws/aws-sdk-go-v2/service/eventbridge"
	ebtypes "github.com/aws/aws-sdk-go-v2/service/eventbridge/types"
)

// DefaultEventBus is the only event bus the fake has; AWS services deliver
// their events to it.
const DefaultEventBus = "default"

// Suffixes of the names of the interruption rules AddInterruptionRules
// creates, after "<prefix>-", as docs/aws.md names them.
const (
	RuleSpotInterruption = "spot-interruption"
	RuleRebalance        = "rebalance"
	RuleStateChange      = "state-change"
	RuleScheduledChange  = "scheduled-change"
)

// Rule is an EventBridge rule on the default event bus.
type Rule struct {
	Name         string
	EventPattern string
	Description  string
	// Disabled rules match nothing; a new rule is enabled.
	Disabled bool
	// Targets are the ARNs the rule delivers to.
	Targets []string
}

// interruptionRulePatterns are the event patterns of the four rules
// Karpenter's reference CloudFormation template creates for the interruption
// queue, by rule name suffix. They match the events the Send* methods put on
// the queue.
var interruptionRulePatterns = map[string]string{
	RuleSpotInterruption: `{"source":["` + SourceEC2 + `"],"detail-type":["` + DetailTypeSpotInterruption + `"]}`,
	RuleRebalance:        `{"source":["` + SourceEC2 + `"],"detail-type":["` + DetailTypeRebalanceRecommendation + `"]}`,
	RuleStateChange:      `{"source":["` + SourceEC2 + `"],"detail-type":["` + DetailTypeStateChange + `"]}`,
	RuleScheduledChange:  `{"source":["` + SourceHealth + `"],"detail-type":["` + DetailTypeHealthEvent + `"]}`,
}

// PutRule creates or replaces a rule.
func (f *AWS) PutRule(r Rule) error {
	if r.Name == "" {
		return fmt.Errorf("a rule needs a name")
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.rules == nil {
		f.rules = map[string]*Rule{}
	}
	r.Targets = slices.Clone(r.Targets)
	f.rules[r.Name] = &r
	return nil
}

// AddInterruptionRules creates the four rules Karpenter's reference
// CloudFormation template routes to the interruption queue (spot interruption
// warning, rebalance recommendation, instance state change, AWS Health
// scheduled change), named "<prefix>-<suffix>" with the Rule* suffixes and
// each targeting the queue, and returns their names in order.
func (f *AWS) AddInterruptionRules(prefix, queueName string) ([]string, error) {
	f.mu.Lock()
	q, ok := f.queues[queueName]
	f.mu.Unlock()
	if !ok {
		return nil, fmt.Errorf("no queue %s", queueName)
	}
	arn := f.queueARN(q)
	names := make([]string, 0, len(interruptionRulePatterns))
	for _, suffix := range sortedKeys(interruptionRulePatterns) {
		name := prefix + "-" + suffix
		err := f.PutRule(Rule{Name: name, EventPattern: interruptionRulePatterns[suffix],
			Description: "Routes interruption events to " + queueName, Targets: []string{arn}})
		if err != nil {
			return nil, err
		}
		names = append(names, name)
	}
	return names, nil
}

// RemoveRule deletes a rule and its targets.
func (f *AWS) RemoveRule(name string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if _, ok := f.rules[name]; !ok {
		return fmt.Errorf("no rule %s", name)
	}
	delete(f.rules, name)
	return nil
}

// SetRuleEnabled enables or disables a rule, as `aws events enable-rule` and
// `disable-rule` do.
func (f *AWS) SetRuleEnabled(name string, enabled bool) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	r, ok := f.rules[name]
	if !ok {
		return fmt.Errorf("no rule %s", name)
	}
	r.Disabled = !enabled
	return nil
}

func (f *AWS) ruleARN(name string) string {
	return fmt.Sprintf("arn:aws:events:%s:%s:rule/%s", f.opts.Region, f.opts.AccountID, name)
}

// checkEventBus accepts the default event bus, by name or ARN.
func (f *AWS) checkEventBus(api string, bus *string) error {
	b := deref(bus)
	if b == "" || b == DefaultEventBus || b == fmt.Sprintf("arn:aws:events:%s:%s:event-bus/%s", f.opts.Region, f.opts.AccountID, DefaultEventBus) {
		return nil
	}
	return typed(svcEvents, api, &ebtypes.ResourceNotFoundException{Message: ptr(fmt.Sprintf("Event bus %s does not exist.", b))})
}

// ListRuleNamesByTarget implements sdk.EventBridge. Names come sorted; Limit
// (1 to 100) pages them, with NextToken the offset of the next page.
func (f *AWS) ListRuleNamesByTarget(_ context.Context, in *eventbridge.ListRuleNamesByTargetInput, _ ...func(*eventbridge.Options)) (*eventbridge.ListRuleNamesByTargetOutput, error) {
	const api = "ListRuleNamesByTarget"
	unlock, err := f.lock(api, in)
	defer unlock()
	if err != nil {
		return nil, err
	}
	target := deref(in.TargetArn)
	if target == "" {
		return nil, newAPIError(svcEvents, api, "ValidationException", "1 validation error detected: Value null at 'targetArn' failed to satisfy constraint: Member must not be null", 400)
	}
	if err := f.checkEventBus(api, in.EventBusName); err != nil {
		return nil, err
	}
	limit := 100
	if in.Limit != nil {
		limit = int(*in.Limit)
		if limit < 1 || limit > 100 {
			return nil, newAPIError(svcEvents, api, "ValidationException", fmt.Sprintf("1 validation error detected: Value '%d' at 'limit' failed to satisfy constraint: Member must have value between 1 and 100", limit), 400)
		}
	}
	var names []string
	for _, name := range sortedKeys(f.rules) {
		if slices.Contains(f.rules[name].Targets, target) {
			names = append(names, name)
		}
	}
	start := 0
	if tok := deref(in.NextToken); tok != "" {
		start, err = strconv.Atoi(tok)
		if err != nil || start < 0 || start > len(names) {
			return nil, newAPIError(svcEvents, api, "ValidationException", "The NextToken provided is invalid.", 400)
		}
	}
	out := &eventbridge.ListRuleNamesByTargetOutput{RuleNames: []string{}}
	end := min(start+limit, len(names))
	out.RuleNames = append(out.RuleNames, names[start:end]...)
	if end < len(names) {
		out.NextToken = ptr(strconv.Itoa(end))
	}
	return out, nil
}

// DescribeRule implements sdk.EventBridge.
func (f *AWS) DescribeRule(_ context.Context, in *eventbridge.DescribeRuleInput, _ ...func(*eventbridge.Options)) (*eventbridge.DescribeRuleOutput, error) {
	const api = "DescribeRule"
	unlock, err := f.lock(api, in)
	defer unlock()
	if err != nil {
		return nil, err
	}
	if err := f.checkEventBus(api, in.EventBusName); err != nil {
		return nil, err
	}
	name := deref(in.Name)
	r, ok := f.rules[name]
	if !ok {
		return nil, typed(svcEvents, api, &ebtypes.ResourceNotFoundException{Message: ptr(fmt.Sprintf("Rule %s does not exist on EventBus %s.", name, DefaultEventBus))})
	}
	state := ebtypes.RuleStateEnabled
	if r.Disabled {
		state = ebtypes.RuleStateDisabled
	}
	out := &eventbridge.DescribeRuleOutput{
		Name: ptr(r.Name), Arn: ptr(f.ruleARN(r.Name)), EventPattern: ptr(r.EventPattern), State: state,
		EventBusName: ptr(DefaultEventBus), CreatedBy: ptr(f.opts.AccountID),
	}
	if r.Description != "" {
		out.Description = ptr(r.Description)
	}
	return out, nil
}
