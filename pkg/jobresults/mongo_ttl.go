package jobresults

import (
	"context"
	"errors"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
)

// ttlIndexName is the name of the TTL index the store creates: the
// server's default for a {finished_at: 1} index.
const ttlIndexName = fieldFinishedAt + "_1"

// codeIndexNotFound is the server's IndexNotFound error code.
const codeIndexNotFound = 27

// ttlAction is what Setup does about the TTL index on the finish stamp.
type ttlAction int

const (
	// ttlKeep: an index on {finished_at: 1} whose only option is the
	// wanted expireAfterSeconds exists (whatever its name): leave it.
	ttlKeep ttlAction = iota
	// ttlCreate: no index on {finished_at: 1}: create finished_at_1.
	ttlCreate
	// ttlCollMod: a TTL index on {finished_at: 1} with another expiry and no other
	// option: change its expiry in place (collMod), which needs no rebuild
	// and leaves no moment without the index.
	ttlCollMod
	// ttlReplace: an index on {finished_at: 1} with other options (not a
	// TTL index, partial, sparse...): drop it (ignoring IndexNotFound,
	// another replica may have dropped it first) and create finished_at_1.
	ttlReplace
)

// ttlPlan is the decision of planTTL.
type ttlPlan struct {
	Action ttlAction
	// Index names the existing index to keep, change or drop.
	Index string
}

// planTTL decides what to do about the TTL index, given the collection's
// index specifications (as listIndexes returns them) and the wanted expiry
// in seconds. The rules: an index with
// the same key whose options are exactly {expireAfterSeconds: n} is kept
// whatever its name; otherwise the index is changed or replaced.
func planTTL(existing []bson.Raw, seconds int64) ttlPlan {
	var found *ttlPlan
	for _, spec := range existing {
		if !isKeyOn(spec, fieldFinishedAt) {
			continue
		}
		name, _ := spec.Lookup("name").StringValueOK()
		opts, _ := spec.Elements()
		var expire bson.RawValue
		others := 0
		for _, el := range opts {
			switch el.Key() {
			case "v", "key", "name", "ns":
			case "expireAfterSeconds":
				expire = el.Value()
			default:
				others++
			}
		}
		n, isNumber := numberValue(expire)
		switch {
		case isNumber && others == 0 && n == float64(seconds):
			return ttlPlan{Action: ttlKeep, Index: name}
		case found != nil:
			// Keep the first candidate; a later exact match still wins.
		case isNumber && others == 0:
			found = &ttlPlan{Action: ttlCollMod, Index: name}
		default:
			found = &ttlPlan{Action: ttlReplace, Index: name}
		}
	}
	if found != nil {
		return *found
	}
	return ttlPlan{Action: ttlCreate}
}

// isKeyOn reports whether an index spec's key is exactly {field: 1}.
func isKeyOn(spec bson.Raw, field string) bool {
	key, ok := spec.Lookup("key").DocumentOK()
	if !ok {
		return false
	}
	els, err := key.Elements()
	if err != nil || len(els) != 1 || els[0].Key() != field {
		return false
	}
	n, ok := numberValue(els[0].Value())
	return ok && n == 1
}

// recordTimeTTL returns the names of the TTL indexes on {time: 1}: earlier
// versions expired records that long after their last write, which removes
// the records of a job still open. Setup drops them when it creates the
// TTL index on the finish stamp.
func recordTimeTTL(existing []bson.Raw) []string {
	var names []string
	for _, spec := range existing {
		if !isKeyOn(spec, fieldTime) {
			continue
		}
		if _, ok := numberValue(spec.Lookup("expireAfterSeconds")); ok {
			name, _ := spec.Lookup("name").StringValueOK()
			names = append(names, name)
		}
	}
	return names
}

// numberValue returns a BSON number as a float64.
func numberValue(v bson.RawValue) (float64, bool) {
	switch v.Type {
	case bson.TypeInt32:
		return float64(v.Int32()), true
	case bson.TypeInt64:
		return float64(v.Int64()), true
	case bson.TypeDouble:
		return v.Double(), true
	}
	return 0, false
}

// collModCommand changes the expiry of an existing TTL index.
func collModCommand(collection, index string, seconds int64) bson.D {
	return bson.D{
		e("collMod", collection),
		e("index", bson.D{e("name", index), e("expireAfterSeconds", seconds)}),
	}
}

// ttlIndexModel is the TTL index the store creates.
func ttlIndexModel(seconds int64) mongo.IndexModel {
	return mongo.IndexModel{
		Keys:    bson.D{e(fieldFinishedAt, 1)},
		Options: options.Index().SetName(ttlIndexName).SetExpireAfterSeconds(int32(seconds)),
	}
}

// isIndexNotFound reports whether err is the server's IndexNotFound.
func isIndexNotFound(err error) bool {
	var ce mongo.CommandError
	return errors.As(err, &ce) && ce.Code == codeIndexNotFound
}

// ensureTTL applies the TTL plan for a positive TTL.
func (s *MongoStore) ensureTTL(ctx context.Context, seconds int64) error {
	cur, err := s.coll.Indexes().List(ctx)
	if err != nil {
		return err
	}
	var specs []bson.Raw
	if err := cur.All(ctx, &specs); err != nil {
		return err
	}
	plan := planTTL(specs, seconds)
	switch plan.Action {
	case ttlKeep:
	case ttlCollMod:
		err = s.coll.Database().RunCommand(ctx, collModCommand(s.coll.Name(), plan.Index, seconds)).Err()
	case ttlReplace:
		if err = s.coll.Indexes().DropOne(ctx, plan.Index); err != nil && !isIndexNotFound(err) {
			return err
		}
		fallthrough
	case ttlCreate:
		_, err = s.coll.Indexes().CreateOne(ctx, ttlIndexModel(seconds))
	}
	if err != nil {
		return err
	}
	// Only once the new index is in place: the records of finished jobs
	// then never go without a TTL.
	for _, name := range recordTimeTTL(specs) {
		if err := s.coll.Indexes().DropOne(ctx, name); err != nil && !isIndexNotFound(err) {
			return err
		}
	}
	return nil
}
