// The copy button of a secret: the one script of the console. It copies
// the named field's value and says so to screen readers too.
document.addEventListener("click", async (e) => {
  const button = e.target.closest("button[data-copy]");
  if (!button) return;
  const field = document.getElementById(button.dataset.copy);
  const status = button.parentElement.querySelector(".copied");
  try {
    await navigator.clipboard.writeText(field.value);
    status.textContent = "Copied.";
  } catch {
    field.select();
    status.textContent = "Selected: press Ctrl+C to copy.";
  }
});
