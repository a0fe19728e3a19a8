use super::*;

fn usage(model: Option<&str>, p: Provider, i: u64, o: u64, r: u64, w: u64) -> Option<ProxyEvent> {
    Some(ProxyEvent::Usage {
        provider: p,
        model: model.map(str::to_string),
        input_tokens: i,
        output_tokens: o,
        cache_read_tokens: r,
        cache_write_tokens: w,
    })
}

/// Feeds `body` in pieces of `step` bytes, so that lines and events straddle chunks.
fn read(p: Provider, sse: bool, body: &str, step: usize) -> Option<ProxyEvent> {
    let mut r = UsageReader::new(p, sse, 200);
    for piece in body.as_bytes().chunks(step) {
        r.feed(piece);
    }
    r.finish()
}

const ANTHROPIC_SSE: &str = "event: message_start\r\n\
data: {\"type\":\"message_start\",\"message\":{\"model\":\"claude-x\",\"usage\":{\"input_tokens\":25,\"cache_creation_input_tokens\":7,\"cache_read_input_tokens\":100,\"output_tokens\":1}}}\r\n\r\n\
event: content_block_delta\r\n\
data: {\"type\":\"content_block_delta\",\"delta\":{\"type\":\"text_delta\",\"text\":\"hi\"}}\r\n\r\n\
event: message_delta\n\
data: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"end_turn\"},\"usage\":{\"output_tokens\":15}}\n\n\
event: message_stop\n\
data: {\"type\":\"message_stop\"}\n\n";

#[test]
fn anthropic_sse_takes_message_start_then_message_delta_whatever_the_chunking() {
    for step in [1, 7, 64, 10_000] {
        assert_eq!(
            read(Provider::Anthropic, true, ANTHROPIC_SSE, step),
            usage(Some("claude-x"), Provider::Anthropic, 25, 15, 100, 7),
            "step {step}"
        );
    }
}

#[test]
fn anthropic_json_and_a_stream_cut_off_after_its_start() {
    let json = r#"{"id":"m","model":"claude-y","usage":{"input_tokens":3,"output_tokens":4}}"#;
    assert_eq!(
        read(Provider::Anthropic, false, json, 5),
        usage(Some("claude-y"), Provider::Anthropic, 3, 4, 0, 0)
    );
    // No final blank line: the last event still counts.
    let cut = &ANTHROPIC_SSE[..ANTHROPIC_SSE.find("event: content_block_delta").unwrap()];
    assert_eq!(
        read(Provider::Anthropic, true, cut.trim_end(), 9),
        usage(Some("claude-x"), Provider::Anthropic, 25, 1, 100, 7)
    );
}

#[test]
fn openai_responses_sse_and_chat_completions() {
    let sse = "event: response.created\ndata: {\"type\":\"response.created\",\"response\":{\"model\":\"gpt-5\",\"usage\":null}}\n\n\
event: response.output_text.delta\ndata: {\"type\":\"response.output_text.delta\",\"delta\":\"x\"}\n\n\
event: response.completed\ndata: {\"type\":\"response.completed\",\"response\":{\"model\":\"gpt-5\",\"usage\":{\"input_tokens\":50,\"input_tokens_details\":{\"cached_tokens\":20},\"output_tokens\":9,\"total_tokens\":59}}}\n\n";
    assert_eq!(
        read(Provider::OpenAi, true, sse, 13),
        usage(Some("gpt-5"), Provider::OpenAi, 50, 9, 20, 0)
    );
    let chat = r#"{"model":"gpt-4o","choices":[],"usage":{"prompt_tokens":11,"completion_tokens":22,"prompt_tokens_details":{"cached_tokens":3}}}"#;
    assert_eq!(
        read(Provider::OpenAi, false, chat, 4),
        usage(Some("gpt-4o"), Provider::OpenAi, 11, 22, 3, 0)
    );
    let chat_sse = "data: {\"model\":\"gpt-4o\",\"choices\":[{\"delta\":{}}],\"usage\":null}\n\n\
data: {\"model\":\"gpt-4o\",\"choices\":[],\"usage\":{\"prompt_tokens\":5,\"completion_tokens\":6}}\n\ndata: [DONE]\n\n";
    assert_eq!(
        read(Provider::OpenAi, true, chat_sse, 3),
        usage(Some("gpt-4o"), Provider::OpenAi, 5, 6, 0, 0)
    );
}

#[test]
fn gemini_json_array_and_sse_take_the_last_usage_metadata() {
    let one = r#"{"candidates":[],"usageMetadata":{"promptTokenCount":8,"candidatesTokenCount":2,"thoughtsTokenCount":5,"cachedContentTokenCount":4},"modelVersion":"gemini-2.5-pro"}"#;
    assert_eq!(
        read(Provider::Gemini, false, one, 6),
        usage(Some("gemini-2.5-pro"), Provider::Gemini, 8, 7, 4, 0)
    );
    let array = r#"[{"usageMetadata":{"promptTokenCount":8,"candidatesTokenCount":1}},{"usageMetadata":{"promptTokenCount":8,"candidatesTokenCount":30}}]"#;
    assert_eq!(
        read(Provider::Gemini, false, array, 6),
        usage(None, Provider::Gemini, 8, 30, 0, 0)
    );
    let sse = "data: {\"usageMetadata\":{\"promptTokenCount\":9,\"candidatesTokenCount\":1}}\r\n\r\n\
data: {\"usageMetadata\":{\"promptTokenCount\":9,\"candidatesTokenCount\":12},\"modelVersion\":\"g\"}\r\n\r\n";
    assert_eq!(
        read(Provider::Gemini, true, sse, 2),
        usage(Some("g"), Provider::Gemini, 9, 12, 0, 0)
    );
}

#[test]
fn no_usage_is_no_event_and_an_error_is_told_with_its_body() {
    assert_eq!(
        read(
            Provider::Anthropic,
            true,
            "data: {\"type\":\"ping\"}\n\n",
            4
        ),
        None
    );
    assert_eq!(read(Provider::Gemini, false, "not json", 4), None);
    let mut r = UsageReader::new(Provider::OpenAi, false, 429);
    r.feed(br#"{"error":{"message":"rate limited"}}"#);
    assert_eq!(
        r.finish(),
        Some(ProxyEvent::ModelError {
            provider: Provider::OpenAi,
            status: 429,
            message: r#"{"error":{"message":"rate limited"}}"#.into()
        })
    );
}
