"use strict";
document.getElementById("login").addEventListener("submit", async (event) => {
  event.preventDefault();
  const status = document.getElementById("status");
  status.textContent = "";
  const body = { name: document.getElementById("name").value, password: document.getElementById("password").value };
  const response = await fetch("/api/login", {
    method: "POST", headers: { "Content-Type": "application/json" }, body: JSON.stringify(body),
  });
  if (!response.ok) { status.textContent = "Wrong name or password."; return; }
  // Only a path on this site: "/x", never "//other.site" or "https://...".
  const next = new URLSearchParams(location.search).get("next") || "";
  window.location.href = next.startsWith("/") && !next.startsWith("//") && !next.startsWith("/\\") ? next : "/app";
});
