package emulator

import "strings"

// sourceInfo is what the emulator knows about one source.
type sourceInfo struct {
	name string
	// full sources answer with the 34-field job object and take batches.
	full bool
	// batch sources accept POST /v1/queries/batch.
	batch bool
	// inputKey is the key that holds the input.
	inputKey string
	// urlSource sources take a `url` (and answer `Parameter url is empty`).
	urlSource bool
	// context lists the `context` keys of a full source with their default
	// JSON values, in the order the API lists them.
	context []kv
	// strict sources reject unknown keys with an `errors` list; takes holds
	// the keys they accept besides the shared ones, source and the input.
	strict bool
	takes  map[string]bool
	// onePage sources fetch one page whatever `pages` says.
	onePage bool
	// llm sources take `prompt`.
	llm bool
	// resultMeta sources add _request, _response and session_info to result
	// entries.
	resultMeta bool
}

type kv struct {
	key string
	raw string
}

// sharedKeys are the keys every strict source accepts.
func sharedKeys() map[string]bool {
	return setOf("aggregate_name", "browser_instructions", "callback_url", "client_notes",
		"geo_location", "markdown", "parse", "parser_type", "parsing_instructions", "render",
		"storage_type", "storage_url", "user_agent_type", "xhr")
}

func setOf(keys ...string) map[string]bool {
	m := make(map[string]bool, len(keys))
	for _, k := range keys {
		m[k] = true
	}
	return m
}

// inputKeyNames are the keys that can hold a payload's input, in lookup order.
func inputKeyNames() [7]string {
	return [...]string{"query", "url", "product_id", "prompt", "video_id", "channel_handle", "category_id"}
}

// newSourceTable returns the sources the emulator accepts: the 26 sources
// that take a batch (23 with the full job object, plus the three LLM sources)
// with the context keys recorded live, universal_ecommerce, and a selection of
// the strict sources with the short object.
func newSourceTable() map[string]*sourceInfo {
	firstFive := []kv{
		{"force_headers", "false"}, {"force_cookies", "false"}, {"hc_policy", "true"},
		{"parse_json_schema", "null"}, {"parse_json_prompt", "null"},
	}
	ctx := func(more ...kv) []kv { return append(append([]kv(nil), firstFive...), more...) }
	universal := ctx(
		kv{"successful_status_codes", "[]"}, kv{"follow_redirects", "null"}, kv{"cookies", "[]"},
		kv{"headers", "[]"}, kv{"session_id", "null"}, kv{"http_method", `"get"`}, kv{"content", "null"},
		kv{"store_id", "null"}, kv{"proxy_location", "null"}, kv{"delivery_location", "null"},
		kv{"fulfillment_type", "null"},
	)
	full := map[string][]kv{
		"universal":           universal,
		"universal_ecommerce": universal,
		"amazon": ctx(kv{"check_empty_geo", "null"}, kv{"safe_search", "true"}, kv{"cookies", "[]"},
			kv{"headers", "[]"}, kv{"currency", "null"}),
		"amazon_bestsellers": ctx(kv{"category_id", "null"}, kv{"check_empty_geo", "null"},
			kv{"safe_search", "true"}, kv{"currency", "null"}),
		"amazon_pricing": ctx(kv{"condition", "null"}, kv{"check_empty_geo", "null"},
			kv{"safe_search", "true"}, kv{"currency", "null"}),
		"amazon_product": ctx(kv{"autoselect_variant", "false"}, kv{"check_empty_geo", "null"},
			kv{"safe_search", "true"}, kv{"currency", "null"}),
		"amazon_search": ctx(kv{"category_id", "null"}, kv{"merchant_id", "null"}, kv{"check_empty_geo", "null"},
			kv{"safe_search", "true"}, kv{"currency", "null"}, kv{"sort_by", "null"}, kv{"refinements", "null"},
			kv{"min_price", "null"}, kv{"max_price", "null"}),
		"amazon_sellers": ctx(kv{"check_empty_geo", "null"}, kv{"safe_search", "true"}, kv{"currency", "null"}),
		"bing":           ctx(),
		"bing_search":    ctx(kv{"safe_search", "null"}),
		"google":         ctx(),
		"google_ads": ctx(kv{"disable_scripts", "false"}, kv{"expand_aio", "false"},
			kv{"adstest", "false"}),
		"google_ai_mode": ctx(),
		"google_lens":    ctx(kv{"keywords", "null"}),
		"google_maps":    ctx(kv{"hotel_occupancy", "2"}, kv{"hotel_dates", "null"}),
		"google_scholar": ctx(),
		"google_search": ctx(kv{"results_language", "null"}, kv{"safe_search", "null"}, kv{"tbm", "null"},
			kv{"cr", "null"}, kv{"filter", "null"}, kv{"nfpr", "null"}, kv{"tbs", "null"}, kv{"fpstate", "null"},
			kv{"aomd", "null"}, kv{"udm", "null"}, kv{"limit_per_page", "[]"}, kv{"disable_scripts", "false"},
			kv{"expand_aio", "false"}),
		"google_shopping_product": ctx(),
		"google_shopping_search": ctx(kv{"sort_by", "null"}, kv{"min_price", "null"}, kv{"max_price", "null"},
			kv{"tbs", "null"}),
		"google_travel_hotels": ctx(kv{"hotel_occupancy", "2"}, kv{"hotel_dates", "null"},
			kv{"hotel_classes", "[]"}, kv{"adults", "null"}, kv{"children", "null"}),
		"google_trends_explore": ctx(kv{"search_type", `"web_search"`}, kv{"date_from", "null"},
			kv{"date_to", "null"}, kv{"category_id", "null"}),
		"youtube_download": ctx(kv{"download_type", `"audio_video"`}, kv{"video_quality", `"720"`},
			kv{"audio_format", "null"}, kv{"audio_language", "null"}, kv{"video_format", "null"},
			kv{"start_at", "null"}, kv{"end_at", "null"}),
		"youtube_metadata":  ctx(),
		"youtube_subtitles": ctx(kv{"language_code", "null"}, kv{"subtitle_origin", "null"}),
	}
	urlSources := setOf("amazon", "bing", "google", "universal", "universal_ecommerce")
	onePage := setOf("amazon", "amazon_product", "amazon_sellers", "universal", "universal_ecommerce")

	table := make(map[string]*sourceInfo, 64)
	for name, context := range full {
		key := "query"
		if urlSources[name] {
			key = "url"
		}
		table[name] = &sourceInfo{
			name: name, full: true, batch: true, inputKey: key, urlSource: urlSources[name],
			context: context, onePage: onePage[name],
			resultMeta: name == "universal" || name == "universal_ecommerce",
		}
	}
	for _, name := range []string{"chatgpt", "gemini", "perplexity"} {
		table[name] = &sourceInfo{name: name, batch: true, inputKey: "prompt", llm: true}
	}

	domain := setOf("domain")
	paged := setOf("domain", "start_page")
	store := setOf("delivery_zip", "fulfillment_type", "store_id")
	strict := map[string]map[string]bool{
		"airbnb":                     {},
		"aliexpress_product":         setOf("domain", "subdomain"),
		"aliexpress_search":          paged,
		"bestbuy_product":            setOf("delivery_zip", "domain", "store_id"),
		"bestbuy_search":             setOf("delivery_zip", "domain", "fulfillment_type", "start_page", "store_id"),
		"costco_product":             domain,
		"costco_search":              paged,
		"ebay":                       {},
		"ebay_product":               domain,
		"ebay_search":                paged,
		"etsy_product":               {},
		"etsy_search":                setOf("domain", "start_page", "store_id"),
		"idealo_search":              domain,
		"kroger_product":             store,
		"kroger_search":              setOf("brand", "delivery_zip", "fulfillment_type", "price_range", "store_id"),
		"lowes_product":              setOf("delivery_zip", "store_id"),
		"mercadolibre_product":       domain,
		"mercadolibre_search":        domain,
		"target":                     store,
		"target_category":            store,
		"target_product":             store,
		"target_search":              store,
		"walmart":                    store,
		"walmart_product":            setOf("delivery_zip", "domain", "fulfillment_type", "store_id"),
		"walmart_search":             setOf("delivery_zip", "domain", "fulfillment_speed", "fulfillment_type", "max_price", "min_price", "sort_by", "start_page", "store_id"),
		"youtube_channel":            setOf("limit"),
		"youtube_search":             setOf("upload_date", "type", "duration", "sort_by"),
		"youtube_video_trainability": {},
		"zillow":                     {},
	}
	named := map[string]string{
		"target_category":            "category_id",
		"youtube_channel":            "channel_handle",
		"youtube_video_trainability": "video_id",
	}
	bare := setOf("youtube_channel", "youtube_search")
	for name, takes := range strict {
		key, ok := named[name]
		switch {
		case ok:
		case strings.HasSuffix(name, "_product"):
			key = "product_id"
		case strings.Contains(name, "_"):
			key = "query"
		default:
			key = "url"
		}
		table[name] = &sourceInfo{name: name, inputKey: key, strict: true, takes: takes, resultMeta: !bare[name]}
	}
	return table
}
