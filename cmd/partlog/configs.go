package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/partlog/partlog"
	"github.com/partlog/partlog/kafka"
	"github.com/partlog/partlog/transport"
)

const configsHelp = `Usage: partlog configs <describe|alter> --dir DIR --entity-type topics|brokers|groups|users [--entity-name NAME] [flags]

Configs describes and alters the configs of topics, nodes and groups, as
Kafka's kafka-configs.sh does:

  partlog configs describe --dir D --entity-type topics [--entity-name T] [--all]
  partlog configs describe --dir D --entity-type brokers [--entity-name N] [--all]
  partlog configs alter --dir D --entity-type topics --entity-name T
          [--add-config 'k1=v1,k2=[a,b]' | --add-config-file FILE] [--delete-config k1,k2]
  partlog configs describe --dir D --entity-type users [--entity-name U]
  partlog configs alter --dir D --entity-type users --entity-name U
          [--add-config 'SCRAM-SHA-256=[iterations=8192,password=P]'] [--delete-config SCRAM-SHA-512]
  partlog configs alter --dir D --entity-type users|clients --entity-name N|--entity-default
          --add-config 'producer_byte_rate=1048576,consumer_byte_rate=2097152,request_percentage=50'
  partlog configs alter --dir D --user U|--user-defaults --client C|--client-defaults --add-config ...
  partlog configs describe --dir D --entity-type clients [--entity-name C]
  partlog configs describe --dir D --entity-type groups [--entity-name G] [--all]
  partlog configs alter --dir D --entity-type groups --entity-name G
          [--add-config 'share.auto.offset.reset=earliest'] [--delete-config k1,k2]

--topic T stands for --entity-type topics --entity-name T, --broker N
for --entity-type brokers --entity-name N, and --group G for --entity-type
groups --entity-name G. The action may also be given as
Kafka's tool takes it, as a flag: configs --describe is configs describe.

Describe prints, for the topic or node named (or every one), the configs it
sets itself, as kafka-configs.sh prints them:

  Dynamic configs for topic T are:
    retention.ms=600000 sensitive=false synonyms={DYNAMIC_TOPIC_CONFIG:retention.ms=600000, DEFAULT_CONFIG:log.retention.ms=604800000}

with --all, every config in force, the defaults too ("All configs for
..."). A synonym is where a value comes from: the topic's own config, the
node's setting that gives the topic's default (STATIC_BROKER_CONFIG when
the node sets it, DEFAULT_CONFIG when it is partlog's default). A node's
settings are static (partlog serve's flags): they show under --all, and
altering them fails with the node's error.

Alter sets the configs of --add-config, whose entries commas separate (a
value that holds commas goes in square brackets: cleanup.policy=[compact,delete]),
or of --add-config-file, a properties file; it removes the topic's own
values of --delete-config, so that the defaults apply again. Every other
config keeps its value. Topic configs take Kafka's names (retention.ms,
segment.bytes, cleanup.policy, ...).

A group's configs are Kafka's group configs (KIP-848, KIP-932), which a
group that does not exist yet may have too: consumer.session.timeout.ms,
consumer.heartbeat.interval.ms, share.session.timeout.ms,
share.heartbeat.interval.ms, share.record.lock.duration.ms,
share.auto.offset.reset (latest, earliest or by_duration:<ISO-8601
duration>) and share.isolation.level (read_uncommitted, read_committed),
checked as Kafka checks them. Describe prints those the group sets
(synonyms={DYNAMIC_GROUP_CONFIG:...}), with --all the defaults too;
without --entity-name, every group's.

A user's configs are its SCRAM credentials, with which SASL listeners
(partlog serve --listen SASL_SSL://...) authenticate it: alter salts the
password here, with a random salt and the iterations given (4096 by
default), and sends the node the salted password (Kafka's
AlterUserScramCredentials); describe shows each credential's mechanism and
iterations, never a key:

  SCRAM credential configs for user-principal 'alice' are SCRAM-SHA-256=iterations=8192

The first user of a cluster whose only listener asks for SASL is made with
--dir while the node is stopped, or through a node's --sasl-users.

Users and client ids also have quotas (Kafka's AlterClientQuotas):
producer_byte_rate and consumer_byte_rate bound the bytes a second a client
produces and fetches, request_percentage the share of a core its requests
take. A quota is set for a user, a client id, or a user's client id (--user
U --client C), each possibly the default (--entity-default,
--user-defaults, --client-defaults), and applies as Kafka applies it: the
most specific entity wins. A client over its quota is answered with
throttle_time_ms and waits. Describe prints them as kafka-configs.sh does:

  Quota configs for user-principal 'alice' are consumer_byte_rate=2048.0, producer_byte_rate=1024.0

Instead of --dir DIR, --bootstrap-server HOST:PORT reaches a node that
'partlog serve' serves over TCP; on a cluster, any node takes a topic's
changes, and the others learn them within a heartbeat.
`

// The entity types configs takes, as kafka-configs.sh names them.
const (
	entityTopics  = "topics"
	entityBrokers = "brokers"
)

// runConfigs runs "partlog configs".
func runConfigs(args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("configs")
	where := addTargetFlags(fs)
	entityType := fs.String("entity-type", "", "the `type` of what the configs belong to: topics, brokers, groups, users or clients")
	entityName := fs.String("entity-name", "", "the `name` of the topic, group or user, or the id of the node; describe: every one when not given")
	topic := fs.String("topic", "", "the topic's `name`: the same as --entity-type topics --entity-name name")
	broker := fs.String("broker", "", "the node's `id`: the same as --entity-type brokers --entity-name id")
	group := fs.String("group", "", "the group's `id`: the same as --entity-type groups --entity-name id")
	all := fs.Bool("all", false, "describe: every config in force, not only those the topic, node or group sets itself")
	var addConfig stringsFlag
	fs.Var(&addConfig, "add-config", "alter: the configs to set, `k1=v1,k2=[v2,v3]`: commas separate them, square brackets hold a value's own commas")
	addConfigFile := fs.String("add-config-file", "", "alter: a properties `file` of configs to set, a key=value a line")
	var deleteConfig listFlag
	fs.Var(&deleteConfig, "delete-config", "alter: the configs to remove, `k1,k2`, so that their defaults apply")
	quotaNames := addQuotaFlags(fs)
	actions := addActionFlags(fs, "configs", "describe", "alter")
	operands, err := parseFlags(fs, args, configsHelp, stdout)
	if err != nil {
		return err
	}
	action, err := actions.only(operands)
	if err != nil {
		return err
	}
	qe, isQuota, err := quotaNames.entity(*entityType, *entityName)
	if err != nil {
		return err
	}
	var kind, name string
	if !isQuota {
		hasName := isSet(fs, "entity-name")
		if isSet(fs, "group") {
			if *entityType != "" || hasName || isSet(fs, "topic") || isSet(fs, "broker") {
				return usageErrorf("configs", "--group cannot be given with --entity-type, --entity-name, --topic or --broker")
			}
			*entityType, *entityName, hasName = entityGroups, *group, true
		}
		if kind, name, err = configEntity(*entityType, hasName, *entityName, isSet(fs, "topic"), *topic, isSet(fs, "broker"), *broker); err != nil {
			return err
		}
	}
	var changes []transport.ConfigChange
	switch action {
	case "describe":
		if len(addConfig) > 0 || *addConfigFile != "" || len(deleteConfig) > 0 {
			return usageErrorf("configs", "--add-config, --add-config-file and --delete-config go with alter, not describe")
		}
	case "alter":
		if *all {
			return usageErrorf("configs", "--all goes with describe, not alter")
		}
		if name == "" && !isQuota {
			return usageErrorf("configs", "an entity name must be given with alter of %s", kind)
		}
		if changes, err = configChanges(addConfig, *addConfigFile, deleteConfig); err != nil {
			return err
		}
	default:
		return usageErrorf("configs", "unknown action %q; say describe or alter", action)
	}
	t, err := openTarget("configs", where, stderr)
	if err != nil {
		return err
	}
	defer t.close()
	ctx := context.Background()
	switch {
	case isQuota && action == "alter":
		err = alterQuotas(ctx, t, qe, changes, stdout)
	case isQuota:
		err = describeQuotas(ctx, t, qe, qe.User != "" || *entityType == entityUsers, qe.ClientID != "" || *entityType == entityClients, stdout)
	case kind == entityUsers && action == "alter":
		err = alterUserConfigs(ctx, t, name, changes, stdout)
	case kind == entityUsers:
		err = describeUserConfigs(ctx, t, name, stdout)
	case action == "alter":
		err = alterEntityConfigs(ctx, t, kind, name, changes, stdout)
	case kind == entityGroups:
		err = describeGroupConfigs(ctx, t, name, *all, stdout)
	default:
		err = describeEntityConfigs(ctx, t, kind, name, *all, stdout)
	}
	if err != nil {
		return fmt.Errorf("configs: %w", err)
	}
	return t.close()
}

// configEntity returns the entity type and name the command line gives,
// with --entity-type and --entity-name or with --topic or --broker.
func configEntity(entityType string, hasName bool, entityName string, hasTopic bool, topic string, hasBroker bool, broker string) (kind, name string, err error) {
	switch {
	case (entityType != "" || hasName) && (hasTopic || hasBroker):
		return "", "", usageErrorf("configs", "--entity-type and --entity-name cannot be given with --topic or --broker")
	case hasTopic && hasBroker:
		return "", "", usageErrorf("configs", "--topic and --broker cannot both be given")
	case hasTopic:
		kind, name = entityTopics, topic
	case hasBroker:
		kind, name = entityBrokers, broker
	case entityType == "":
		return "", "", usageErrorf("configs", "give --entity-type topics, brokers, groups or users (or --topic T, --broker N, --group G)")
	case entityType != entityTopics && entityType != entityBrokers && entityType != entityGroups && entityType != entityUsers:
		return "", "", usageErrorf("configs", "entity type %q is not topics, brokers, groups or users", entityType)
	default:
		kind, name = entityType, entityName
	}
	if (hasName || hasTopic || hasBroker) && name == "" {
		return "", "", usageErrorf("configs", "the entity name is empty")
	}
	if kind == entityBrokers && name != "" {
		if _, err := strconv.ParseInt(name, 10, 32); err != nil {
			return "", "", usageErrorf("configs", "the entity name for brokers must be a node id, an integer, not %q", name)
		}
	}
	return kind, name, nil
}

// configChanges returns alter's changes: the removals of --delete-config,
// then the configs of --add-config or --add-config-file to set, by name.
func configChanges(addConfig []string, addConfigFile string, deleteConfig []string) ([]transport.ConfigChange, error) {
	if len(addConfig) > 0 && addConfigFile != "" {
		return nil, usageErrorf("configs", "give --add-config or --add-config-file, not both")
	}
	var set map[string]string
	var err error
	switch {
	case len(addConfig) > 0:
		set = map[string]string{}
		for _, a := range addConfig {
			if err = parseAddConfig(a, set); err != nil {
				return nil, usageErrorf("configs", "%v", err)
			}
		}
	case addConfigFile != "":
		if set, err = readPropertiesFile(addConfigFile); err != nil {
			return nil, fmt.Errorf("configs: --add-config-file: %w", err)
		}
	case len(deleteConfig) == 0:
		return nil, usageErrorf("configs", "alter needs --add-config, --add-config-file or --delete-config")
	}
	var changes []transport.ConfigChange
	for _, k := range deleteConfig {
		changes = append(changes, transport.ConfigChange{Name: k, Op: transport.ConfigDelete})
	}
	for _, k := range slices.Sorted(maps.Keys(set)) {
		changes = append(changes, transport.ConfigChange{Name: k, Op: transport.ConfigSet, Value: set[k]})
	}
	return changes, nil
}

// parseAddConfig adds the configs of an --add-config value to set, read
// as kafka-configs.sh reads them: commas outside square brackets separate
// entries, each key=value (an "=" inside brackets belongs to the value);
// the brackets are dropped from a value and the commas inside them kept,
// so that k=[a,b] sets k to "a,b".
func parseAddConfig(s string, set map[string]string) error {
	for _, entry := range splitOutsideBrackets(s, ",") {
		kv := splitOutsideBrackets(entry, "=")
		if len(kv) != 2 || strings.TrimSpace(kv[0]) == "" {
			return fmt.Errorf("--add-config %q: every config must be key=value, or key=[v1,v2] for a value that holds commas", entry)
		}
		set[strings.TrimSpace(kv[0])] = strings.TrimSpace(strings.NewReplacer("[", "", "]", "").Replace(kv[1]))
	}
	return nil
}

// splitOutsideBrackets splits s at each sep that is not inside square
// brackets.
func splitOutsideBrackets(s, sep string) []string {
	var parts []string
	depth, start := 0, 0
	for i := 0; i < len(s); i++ {
		switch {
		case s[i] == '[':
			depth++
		case s[i] == ']' && depth > 0:
			depth--
		case depth == 0 && strings.HasPrefix(s[i:], sep):
			parts = append(parts, s[start:i])
			start = i + len(sep)
		}
	}
	return append(parts, s[start:])
}

// readPropertiesFile reads a Java properties file, as kafka-configs.sh's
// --add-config-file takes one: "key=value" (or "key: value", "key value")
// lines, "#" and "!" comments, blank lines, a backslash at a line's end
// continuing it on the next.
func readPropertiesFile(path string) (map[string]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	props := map[string]string{}
	sc := bufio.NewScanner(f)
	var logical strings.Builder
	n := 0
	for sc.Scan() {
		n++
		line := strings.TrimLeft(sc.Text(), " \t\f")
		if logical.Len() == 0 && (line == "" || line[0] == '#' || line[0] == '!') {
			continue
		}
		if trailing := len(line) - len(strings.TrimRight(line, `\`)); trailing%2 == 1 {
			logical.WriteString(line[:len(line)-1])
			continue
		}
		logical.WriteString(line)
		k, v := propertiesKeyValue(logical.String())
		logical.Reset()
		if k == "" {
			return nil, fmt.Errorf("%s:%d: a line without a key", path, n)
		}
		props[k] = v
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if logical.Len() > 0 {
		k, v := propertiesKeyValue(logical.String())
		props[k] = v
	}
	return props, nil
}

// propertiesSeparator matches where a properties line's key ends: at its
// first unescaped "=", ":" or white space, with the white space around it.
var propertiesSeparator = regexp.MustCompile(`^((?:[^\\=: \t\f]|\\.)*)[ \t\f]*[=: \t\f]?[ \t\f]*`)

// propertiesKeyValue splits a properties line into its key and value,
// unescaped.
func propertiesKeyValue(line string) (string, string) {
	m := propertiesSeparator.FindStringSubmatchIndex(line)
	return unescapeProperty(line[m[2]:m[3]]), unescapeProperty(line[m[1]:])
}

// unescapeProperty undoes a properties file's escapes: \t, \n, \r, \f,
// \uXXXX, and a backslash before any other character.
func unescapeProperty(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] != '\\' || i+1 == len(s) {
			b.WriteByte(s[i])
			continue
		}
		i++
		switch c := s[i]; c {
		case 't':
			b.WriteByte('\t')
		case 'n':
			b.WriteByte('\n')
		case 'r':
			b.WriteByte('\r')
		case 'f':
			b.WriteByte('\f')
		case 'u':
			if r, err := strconv.ParseUint(s[i+1:min(i+5, len(s))], 16, 32); err == nil && i+5 <= len(s) {
				b.WriteRune(rune(r))
				i += 4
				break
			}
			b.WriteByte(c)
		default:
			b.WriteByte(c)
		}
	}
	return b.String()
}

// alterEntityConfigs makes changes to the configs of the topic, node or
// group name and says so as kafka-configs.sh does. As kafka-configs.sh
// does, it first checks that each config to remove is one the topic or
// group sets.
func alterEntityConfigs(ctx context.Context, t *target, kind, name string, changes []transport.ConfigChange, stdout io.Writer) error {
	r := transport.ConfigResource{Type: transport.ConfigTopic, Name: name}
	switch kind {
	case entityBrokers:
		r.Type = transport.ConfigBroker
	case entityGroups:
		r.Type = transport.ConfigGroup
	}
	if kind != entityBrokers {
		entries, err := describeResource(ctx, t.admin(), r)
		if err != nil {
			return errors.New(t.adminMessage(err, name))
		}
		var invalid []string
		for _, c := range changes {
			if c.Op == transport.ConfigDelete && !slices.ContainsFunc(entries, func(e transport.ConfigEntry) bool { return e.Name == c.Name && !e.IsDefault }) {
				invalid = append(invalid, c.Name)
			}
		}
		if len(invalid) > 0 {
			return fmt.Errorf("invalid config(s) to delete: %s; %s", strings.Join(invalid, ","), ownConfigNames(strings.TrimSuffix(kind, "s"), name, entries))
		}
	}
	if err := alterConfigs(ctx, t.admin(), r, changes); err != nil {
		return fmt.Errorf("altering %s %s: %s", strings.TrimSuffix(kind, "s"), name, t.adminMessage(err, name))
	}
	fmt.Fprintf(stdout, "Completed updating config for %s %s.\n", strings.TrimSuffix(kind, "s"), name)
	return nil
}

// ownConfigNames says which of the configs, entries, of the topic or
// group name (what) it sets itself.
func ownConfigNames(what, name string, entries []transport.ConfigEntry) string {
	var names []string
	for _, e := range entries {
		if !e.IsDefault {
			names = append(names, e.Name)
		}
	}
	if len(names) == 0 {
		return what + " " + name + " has no configs of its own"
	}
	return what + " " + name + "'s own configs are " + strings.Join(names, ",")
}

// describeResource returns the configs in force of one topic or node.
func describeResource(ctx context.Context, admin transport.AdminClient, r transport.ConfigResource) ([]transport.ConfigEntry, error) {
	resp, err := admin.DescribeConfigs(ctx, &transport.DescribeConfigsRequest{Resources: []transport.ConfigResource{r}})
	if err != nil {
		return nil, err
	}
	if len(resp.Resources) != 1 {
		return nil, fmt.Errorf("%w: %d resources answered for 1 asked", kafka.ErrInvalidRequest, len(resp.Resources))
	}
	return resp.Resources[0].Configs, resp.Resources[0].Err
}

// describeEntityConfigs prints the configs of the topic or node name, or of
// every one, as kafka-configs.sh --describe does: those the topic or node
// sets itself, or with all every config in force.
func describeEntityConfigs(ctx context.Context, t *target, kind, name string, all bool, stdout io.Writer) error {
	which := "Dynamic"
	if all {
		which = "All"
	}
	if kind == entityBrokers {
		var brokers []string
		if name != "" {
			brokers = []string{name}
		} else {
			ids, err := t.brokerIDs(ctx)
			if err != nil {
				return err
			}
			for _, id := range ids {
				brokers = append(brokers, strconv.Itoa(int(id)))
			}
		}
		for _, b := range brokers {
			entries, err := describeBroker(ctx, t, b)
			if err != nil {
				return err
			}
			fmt.Fprintf(stdout, "%s configs for broker %s are:\n", which, b)
			if !all {
				continue // a node's settings are all static: none is dynamic
			}
			for _, e := range entries {
				writeConfigEntry(stdout, e, brokerSynonym(e.Name, e))
			}
		}
		if name == "" {
			// As kafka-configs.sh ends: the cluster-wide dynamic
			// defaults, of which partlog has none.
			fmt.Fprintln(stdout, "Default configs for brokers in the cluster are:")
		}
		return nil
	}
	topics := []string{name}
	if name == "" {
		var err error
		if topics, err = t.listTopics(ctx); err != nil {
			return err
		}
	}
	// The node's settings give the topics' defaults: their synonyms.
	node, err := describeResource(ctx, t.admin(), transport.ConfigResource{Type: transport.ConfigBroker})
	if err != nil {
		return fmt.Errorf("describing the node's settings: %s", serverMessage(err))
	}
	for _, topic := range topics {
		entries, err := describeResource(ctx, t.admin(), transport.ConfigResource{Type: transport.ConfigTopic, Name: topic})
		if err != nil {
			return errors.New(t.adminMessage(err, topic))
		}
		fmt.Fprintf(stdout, "%s configs for topic %s are:\n", which, topic)
		for _, e := range entries {
			if !all && e.IsDefault {
				continue
			}
			var synonyms []string
			if !e.IsDefault {
				synonyms = append(synonyms, "DYNAMIC_TOPIC_CONFIG:"+e.Name+"="+e.Value)
			}
			if bk, ok := partlog.BrokerConfigName(e.Name); ok {
				if i := slices.IndexFunc(node, func(n transport.ConfigEntry) bool { return n.Name == bk }); i >= 0 {
					synonyms = append(synonyms, brokerSynonym(bk, node[i]))
				}
			}
			writeConfigEntry(stdout, e, synonyms...)
		}
	}
	return nil
}

// describeBroker returns the settings of node id, which only that node
// answers.
func describeBroker(ctx context.Context, t *target, id string) ([]transport.ConfigEntry, error) {
	n, _ := strconv.ParseInt(id, 10, 32) // checked with the command line
	admin, done, err := t.brokerAdmin(ctx, int32(n))
	if err != nil {
		return nil, err
	}
	defer done()
	entries, err := describeResource(ctx, admin, transport.ConfigResource{Type: transport.ConfigBroker, Name: id})
	if err != nil {
		return nil, fmt.Errorf("describing broker %s: %s", id, serverMessage(err))
	}
	return entries, nil
}

// brokerSynonym names where a node's setting comes from, as Kafka's
// synonyms do: the node's configuration, or the default.
func brokerSynonym(name string, e transport.ConfigEntry) string {
	source := "STATIC_BROKER_CONFIG"
	if e.IsDefault {
		source = "DEFAULT_CONFIG"
	}
	return source + ":" + name + "=" + e.Value
}

// writeConfigEntry prints one config as kafka-configs.sh --describe does.
func writeConfigEntry(w io.Writer, e transport.ConfigEntry, synonyms ...string) {
	fmt.Fprintf(w, "  %s=%s sensitive=false synonyms={%s}\n", e.Name, e.Value, strings.Join(synonyms, ", "))
}
