//! Gemini's body (thought signatures sent back) and replies (kept, ids, finish reason).

use super::*;
use crate::model::auth::Auth;
use crate::protocol::{ToolCall, ToolSpec};
use std::time::Duration;

fn gemini(stream: bool) -> Gemini {
    Gemini {
        chat: OpenAi {
            http: reqwest::Client::new(),
            url: "http://x/chat/completions".into(),
            auth: Auth::None,
            model: wire_model("gemini-2.5-pro"),
            temperature: None,
            max_output_tokens: 4096,
            stream,
            use_max_completion_tokens: false,
            request_timeout: Duration::from_secs(1),
            idle_timeout: Duration::from_secs(1),
            text_tools: false,
            calls: AtomicU32::new(0),
            prompt_cache_key: None,
        },
        answers: AtomicU32::new(0),
    }
}

fn call(id: &str) -> ToolCall {
    ToolCall { id: id.into(), name: "read_file".into(), arguments: "{\"path\":\"a\"}".into() }
}

#[test]
fn the_model_is_named_as_the_openai_endpoint_wants() {
    assert_eq!(wire_model("gemini-2.5-pro"), "google/gemini-2.5-pro");
    assert_eq!(wire_model("google/gemini-2.5-flash"), "google/gemini-2.5-flash");
}

#[test]
fn thought_signatures_go_back_with_their_calls() {
    let g = gemini(true);
    let signed = finish(
        Reply {
            message: Message::assistant("", vec![call("c1"), call("c2")]),
            finish_reason: FinishReason::Stop,
            usage: None,
            model: None,
        },
        vec![(0, "c2lnLTE=".into())],
        |_| true,
        0,
    );
    assert_eq!(signed.finish_reason, FinishReason::ToolCalls, "Gemini says stop; calls were made");
    let unsigned = Message::assistant("", vec![call("h1")]);
    let req = ChatRequest {
        messages: vec![
            Message::system("sys"),
            Message::user("go"),
            unsigned,
            Message::tool("h1", "x"),
            signed.message,
            Message::tool("c1", "a"),
            Message::tool("c2", "b"),
        ],
        tools: vec![ToolSpec {
            name: "read_file".into(),
            description: "d".into(),
            parameters: json!({"type": "object"}),
        }],
    };
    let b = g.body(&req);
    assert_eq!(b["model"], "google/gemini-2.5-pro");
    assert_eq!(b["stream"], true);
    assert_eq!(b["max_tokens"], 4096);
    assert!(b.get("prompt_cache_key").is_none());
    let msgs = b["messages"].as_array().unwrap();
    let sig = |m: usize, c: usize| msgs[m]["tool_calls"][c].pointer("/extra_content/google/thought_signature").cloned();
    assert_eq!(sig(4, 0), Some(json!("c2lnLTE=")), "the signature Gemini gave, on its call");
    assert_eq!(sig(4, 1), None, "the second of parallel calls had none");
    assert_eq!(sig(2, 0), Some(json!(PLACEHOLDER_SIGNATURE)), "a call with none kept gets the placeholder");
    assert!(
        msgs[4].get("reasoning").is_none() && !msgs[4].to_string().contains(ITEM),
        "kept items stay out of the wire message"
    );
}

#[test]
fn calls_without_ids_get_ids_unique_in_the_run() {
    let r = Reply {
        message: Message::assistant("", vec![call("call_0"), call("srv")]),
        finish_reason: FinishReason::ToolCalls,
        usage: None,
        model: None,
    };
    let r = finish(r, vec![(0, "s".into())], |i| i == 1, 7);
    assert_eq!(r.message.tool_calls[0].id, "call_v7_0");
    assert_eq!(r.message.tool_calls[1].id, "srv");
    assert_eq!(signatures_of(&r.message).get("call_v7_0").map(String::as_str), Some("s"));
    let text = Reply {
        message: Message::assistant("done", vec![]),
        finish_reason: FinishReason::Stop,
        usage: None,
        model: None,
    };
    assert_eq!(finish(text, vec![], |_| true, 0).finish_reason, FinishReason::Stop);
}

#[test]
fn google_errors_inside_a_stream_are_classed() {
    let e =
        google_error(&json!({"error": {"code": 429, "message": "Resource exhausted", "status": "RESOURCE_EXHAUSTED"}}))
            .unwrap();
    assert_eq!((e.class(), e.kind().as_str()), ("retryable", "rate_limited"));
    assert!(google_error(&json!({"choices": []})).is_none());
    assert!(google_error(&json!({"error": {"message": "openai shape"}})).is_none(), "left to the assembler");
}
