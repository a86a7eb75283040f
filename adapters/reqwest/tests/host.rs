//! A client built with `complete_headers(true)` (its attempts' headers carry the
//! endpoint's `Host` and the body's `Content-Length`, for a transport of the caller's
//! own) still sends reqwest's own on its sends: a redirect to another host reaches it
//! with that host's name, and one `Content-Length` each time.

use std::sync::{Arc, Mutex};

use serde_json::json;
use steadfast_reqwest::{Client, EndpointDef, Provider};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

const ANSWER: &str = r#"{"id":"c","object":"chat.completion","created":1,"model":"gpt-4o-mini","choices":[{"index":0,"message":{"role":"assistant","content":"Hi"},"finish_reason":"stop"}],"usage":{"prompt_tokens":1,"completion_tokens":1,"total_tokens":2}}"#;

/// Reads one request (head and `content-length` body) from `tcp`; its head.
async fn read_request(tcp: &mut TcpStream) -> String {
    let mut got = Vec::new();
    let mut buf = [0u8; 4096];
    loop {
        let n = tcp.read(&mut buf).await.unwrap();
        assert!(n > 0, "the request ended early");
        got.extend_from_slice(&buf[..n]);
        let Some(end) = got.windows(4).position(|w| w == b"\r\n\r\n") else {
            continue;
        };
        let head = String::from_utf8_lossy(&got[..end]).to_lowercase();
        let length: usize = head
            .lines()
            .find_map(|l| l.strip_prefix("content-length:"))
            .map_or(0, |v| v.trim().parse().unwrap());
        if got.len() >= end + 4 + length {
            return head;
        }
    }
}

/// Serves on 127.0.0.1 every connection with `answer`, recording each request's head.
async fn serve(answer: String) -> (String, Arc<Mutex<Vec<String>>>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let heads = Arc::new(Mutex::new(Vec::new()));
    let seen = Arc::clone(&heads);
    tokio::spawn(async move {
        while let Ok((mut tcp, _)) = listener.accept().await {
            let head = read_request(&mut tcp).await;
            seen.lock().unwrap().push(head);
            tcp.write_all(answer.as_bytes()).await.unwrap();
        }
    });
    (url, heads)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_redirect_to_another_host_carries_that_host_s_name() {
    let (there, there_heads) = serve(format!(
        "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\
         connection: close\r\n\r\n{ANSWER}",
        ANSWER.len()
    ))
    .await;
    let (here, here_heads) = serve(format!(
        "HTTP/1.1 307 Temporary Redirect\r\nlocation: {there}/v1/chat/completions\r\n\
         content-length: 0\r\nconnection: close\r\n\r\n"
    ))
    .await;
    let client = Client::builder()
        .endpoint(EndpointDef::new(here.clone(), Provider::OpenAi, "sk-1"))
        .complete_headers(true)
        .build()
        .expect("the client builds");
    assert!(client.shared().complete_headers());
    let reply = client
        .chat(json!({"model": "gpt-4o-mini", "messages": [{"role": "user", "content": "Hi"}]}))
        .await
        .expect("the redirected call succeeds");
    assert_eq!(reply.text().as_deref(), Some("Hi"));
    let host_of = |url: &str| format!("host: {}", url.trim_start_matches("http://"));
    let here_heads = here_heads.lock().unwrap();
    let there_heads = there_heads.lock().unwrap();
    assert_eq!(here_heads.len(), 1);
    assert_eq!(there_heads.len(), 1);
    for (heads, url) in [(&here_heads, &here), (&there_heads, &there)] {
        let hosts: Vec<&str> = heads[0]
            .lines()
            .filter(|l| l.starts_with("host:"))
            .collect();
        assert_eq!(hosts, [host_of(url)], "{}", heads[0]);
        let lengths = heads[0]
            .lines()
            .filter(|l| l.starts_with("content-length:"));
        assert_eq!(lengths.count(), 1, "{}", heads[0]);
    }
}
