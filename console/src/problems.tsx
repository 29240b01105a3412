/** The service's messages for a refused form, announced at once (role="alert"), one per line. */
export function Problems({ id, messages }: { id: string; messages: string[] }) {
  return (
    <div id={id} class="error" role="alert">
      {messages.length === 1 ? (
        <p>{messages[0]}</p>
      ) : (
        messages.length > 1 && (
          <ul>
            {messages.map((message) => (
              <li key={message}>{message}</li>
            ))}
          </ul>
        )
      )}
    </div>
  );
}
