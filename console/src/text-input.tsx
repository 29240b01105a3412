/** A text input and its label, as every form of the console has several; `onValue` takes what was typed. */
export function TextInput({
  id,
  label,
  value,
  onValue,
  type = "text",
  ...attributes
}: {
  id: string;
  label: string;
  value: string;
  onValue: (value: string) => void;
  type?: "text" | "email" | "tel" | "password";
  autocomplete?: string;
  required?: boolean;
  "aria-describedby"?: string;
  "aria-invalid"?: boolean;
}) {
  return (
    <>
      <label for={id}>{label}</label>
      <input
        id={id}
        // Preact types an input's attributes per type; the four here take the same ones.
        type={type as "text"}
        value={value}
        onInput={(event) => onValue(event.currentTarget.value)}
        {...attributes}
      />
    </>
  );
}
