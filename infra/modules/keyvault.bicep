// Key Vault for CALLBACK_SIGNING_SECRET (the HMAC key that signs recovery callbacks).
//
// Why a vault and not a @secure() parameter written straight into the app settings: an app setting is plain
// text to everyone who can list the app's configuration, it has no audit trail, and rotating it means a
// redeployment. Here the app setting is a Key Vault reference (@Microsoft.KeyVault(SecretUri=...)), resolved by
// the platform with the app's user-assigned identity (keyVaultReferenceIdentity on the site), which gets
// "Key Vault Secrets User" on this vault. The URI has no version, so a rotated secret is picked up when the
// platform refreshes references (on restart, on a config change, and periodically).
//
// The secret itself is written only when a value is passed (callbackSigningSecret non-empty). infra/deploy.sh
// generates one on the first deployment and passes nothing afterwards, so redeploying never rotates it.

@description('Key Vault name (3-24 characters, globally unique).')
@minLength(3)
@maxLength(24)
param name string

@description('Azure region.')
param location string

@description('Tags for the resources.')
param tags object = {}

@description('Object (principal) id of the function app identity (gets Key Vault Secrets User).')
param principalId string

@description('Value of the callback signing secret; empty = leave the stored secret as it is.')
@secure()
param callbackSigningSecret string = ''

@description('Name of the secret in the vault.')
param secretName string = 'callback-signing-secret'

@description('Purge protection (irreversible once on; a purge-protected vault name stays taken for the retention period after deletion).')
param purgeProtection bool = false

// Built-in role: Key Vault Secrets User (read secret contents).
var keyVaultSecretsUserRoleId = '4633458b-17de-408a-b874-0445c86b69e6'

resource vault 'Microsoft.KeyVault/vaults@2023-07-01' = {
  name: name
  location: location
  tags: tags
  properties: {
    tenantId: tenant().tenantId
    sku: {
      family: 'A'
      name: 'standard'
    }
    enableRbacAuthorization: true
    enableSoftDelete: true
    softDeleteRetentionInDays: 7
    // The API rejects an explicit false: send true or nothing.
    enablePurgeProtection: purgeProtection ? true : null
    publicNetworkAccess: 'Enabled'
  }
}

resource secret 'Microsoft.KeyVault/vaults/secrets@2023-07-01' = if (!empty(callbackSigningSecret)) {
  parent: vault
  name: secretName
  properties: {
    value: callbackSigningSecret
    contentType: 'text/plain'
  }
}

resource secretsUser 'Microsoft.Authorization/roleAssignments@2022-04-01' = {
  name: guid(vault.id, principalId, keyVaultSecretsUserRoleId)
  scope: vault
  properties: {
    roleDefinitionId: subscriptionResourceId('Microsoft.Authorization/roleDefinitions', keyVaultSecretsUserRoleId)
    principalId: principalId
    principalType: 'ServicePrincipal'
    description: 'Key Vault references in the function app settings'
  }
}

@description('Key Vault name.')
output name string = vault.name

@description('Versionless secret URI for the @Microsoft.KeyVault(SecretUri=...) reference (vaultUri ends with a slash).')
output callbackSigningSecretUri string = '${vault.properties.vaultUri}secrets/${secretName}'
