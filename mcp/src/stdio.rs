//! An MCP server over stdin and stdout, for the gateway and for idem's own
//! tools alike: every line screened before rmcp reads it, and every answer
//! written whole, one line each.

use rmcp::service::RoleServer;
use rmcp::{ServerHandler, ServiceExt};

/// The longest line (one JSON-RPC message) read from stdin: a guarded
/// call's arguments are at most 64 KiB, so anything this long is not a
/// call; the transport drops such a line and keeps the session.
pub const MAX_STDIO_LINE: usize = 1024 * 1024;

/// Serves `handler` to one agent over stdin and stdout until it closes them.
///
/// Every line from stdin is screened first ([`crate::screen`]): one over
/// [`MAX_STDIO_LINE`] (read no further than that), one that is not JSON,
/// and a guarded call (`guarded` names them) that names a member twice are
/// answered here, on stdout, and never reach rmcp, which would drop the
/// first two without a word and read the third last-wins. The answers and
/// rmcp's own are written whole, one line each.
pub async fn serve_stdio<H: ServerHandler>(
    handler: H,
    guarded: impl Fn(&str) -> bool + Send + 'static,
) -> Result<(), std::io::Error> {
    use tokio::io::{AsyncBufReadExt, AsyncWriteExt};
    let (rmcp_in, mut feed) = tokio::io::duplex(256 * 1024);
    let (from_rmcp, rmcp_out) = tokio::io::duplex(256 * 1024);
    let (answers, mut answered) = tokio::sync::mpsc::channel::<String>(64);
    let reader = tokio::spawn(async move {
        let mut stdin = tokio::io::BufReader::new(tokio::io::stdin());
        while let Ok(Some((text, len))) = read_line_bounded(&mut stdin, MAX_STDIO_LINE).await {
            if text.iter().all(u8::is_ascii_whitespace) && len <= MAX_STDIO_LINE {
                continue;
            }
            match crate::screen::screen(&text, len, MAX_STDIO_LINE, &guarded) {
                crate::screen::Screened::Pass => {
                    if feed.write_all(&text).await.is_err() || feed.write_all(b"\n").await.is_err()
                    {
                        break;
                    }
                }
                crate::screen::Screened::Answer(a) => {
                    if answers.send(a.to_string()).await.is_err() {
                        break;
                    }
                }
            }
        }
        // End of input: rmcp reads its end too, and finishes.
        drop(feed);
    });
    let writer = tokio::spawn(async move {
        let mut stdout = tokio::io::stdout();
        let mut lines = tokio::io::BufReader::new(from_rmcp).lines();
        loop {
            let line = tokio::select! {
                l = lines.next_line() => match l {
                    Ok(Some(l)) => l,
                    _ => break,
                },
                Some(a) = answered.recv() => a,
            };
            let written = async {
                stdout.write_all(line.as_bytes()).await?;
                stdout.write_all(b"\n").await?;
                stdout.flush().await
            };
            if written.await.is_err() {
                break;
            }
        }
    });
    let transport =
        rmcp::transport::async_rw::AsyncRwTransport::<RoleServer, _, _>::new(rmcp_in, rmcp_out)
            .with_max_line_length(MAX_STDIO_LINE);
    let running = handler
        .serve(transport)
        .await
        .map_err(std::io::Error::other)?;
    let done = running.waiting().await.map_err(std::io::Error::other);
    reader.abort();
    let _ = writer.await;
    done?;
    Ok(())
}

/// One line of at most `max` + 1 bytes kept (the rest of a longer line is
/// read and dropped), with its whole length; `None` at the end of input.
async fn read_line_bounded<R: tokio::io::AsyncBufRead + Unpin>(
    r: &mut R,
    max: usize,
) -> std::io::Result<Option<(Vec<u8>, usize)>> {
    use tokio::io::AsyncBufReadExt;
    let mut kept = Vec::new();
    let mut len = 0usize;
    let mut any = false;
    loop {
        let buf = r.fill_buf().await?;
        if buf.is_empty() {
            return Ok(any.then_some((kept, len)));
        }
        any = true;
        let (chunk, end) = match buf.iter().position(|&b| b == b'\n') {
            Some(i) => (&buf[..i], true),
            None => (buf, false),
        };
        let n = chunk.len();
        let room = (max + 1).saturating_sub(kept.len()).min(n);
        kept.extend_from_slice(&chunk[..room]);
        len += n;
        r.consume(if end { n + 1 } else { n });
        if end {
            if kept.last() == Some(&b'\r') {
                kept.pop();
                len -= 1;
            }
            return Ok(Some((kept, len)));
        }
    }
}
